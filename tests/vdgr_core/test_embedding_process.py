"""An embedder in a child process gives the vectors the in-process embedder gives."""
import numpy as np
import pytest

from schemas.config import EmbeddingConfig
from schemas.errors import EmbeddingError
from vdgr_core.embedding import make_embedder
from vdgr_core.embedding_process import EmbedderProcess

HASHING = EmbeddingConfig(kind="hashing", dim=32)


def test_child_vectors_equal_in_process_vectors():
    texts = ["Hold RESET for 10 seconds.", "DL_MIMO_Mode on both bands", ""]
    with EmbedderProcess(HASHING) as child:
        assert (child.model_id, child.dim) == (make_embedder(HASHING).model_id, 32)
        got = child.embed(texts)
        assert child.embed([]).shape == (0, 32)
    np.testing.assert_array_equal(got, make_embedder(HASHING).embed(texts))


def test_a_child_that_cannot_load_the_model_raises_a_typed_error(tmp_path):
    broken = EmbeddingConfig(kind="minilm", model_path=str(tmp_path / "no-model"))
    with EmbedderProcess(broken) as child:
        with pytest.raises(EmbeddingError, match="no sentence-transformers model"):
            child.embed(["x"])


def test_closing_an_unused_child_stops_it_at_once():
    child = EmbedderProcess(HASHING)
    child.close()
    assert not child._proc.is_alive()


def test_requests_to_a_dead_child_fail_instead_of_waiting():
    child = EmbedderProcess(HASHING)
    assert child.embed(["x"]).shape == (1, 32)
    child._proc.terminate()
    child._proc.join()
    for _ in range(3):                       # before and after the reader notices the death
        with pytest.raises(EmbeddingError, match="died"):
            child.submit(["y"]).result(timeout=30)
    child.close()


def test_submitted_requests_are_answered_in_order():
    texts = [[f"text {i} {j}" for j in range(i + 1)] for i in range(6)]
    with EmbedderProcess(HASHING) as child:
        futures = [child.submit(t) for t in texts]
        got = [f.result(timeout=60) for f in futures]
    for t, g in zip(texts, got):
        np.testing.assert_array_equal(g, make_embedder(HASHING).embed(t))


def test_a_child_is_idle_once_every_request_is_answered():
    with EmbedderProcess(HASHING) as child:
        assert child.idle()
        futures = [child.submit([f"text {i}"]) for i in range(4)]
        for f in futures:
            f.result(timeout=60)
        assert child.idle()


def test_small_requests_are_embedded_together_and_a_large_one_alone():
    from collections import deque

    from vdgr_core.embedding_process import _next_call

    waiting = deque([["a1"], ["b1", "b2"], ["c1", "c2", "c3"], ["d1"], ["e1", "e2", "e3", "e4"], ["f1"]])
    # small requests (under 3 texts) join the call until it holds 3 texts
    assert _next_call(waiting, 3) == [["a1"], ["b1", "b2"]]
    # a request of 3 texts or more is embedded alone, and answered without waiting for the next
    assert _next_call(waiting, 3) == [["c1", "c2", "c3"]]
    # a large request is never added to a small one's call
    assert _next_call(waiting, 3) == [["d1"]]
    assert _next_call(waiting, 3) == [["e1", "e2", "e3", "e4"]]
    assert _next_call(waiting, 3) == [["f1"]] and not waiting


def test_requests_sent_together_are_answered_in_order_each_with_its_own_vectors():
    texts = [[f"request {i} text {j}" for j in range(i + 1)] for i in range(6)]
    with EmbedderProcess(HASHING) as child:
        futures = [child.submit(t) for t in texts]
        got = [f.result(timeout=60) for f in futures]
    alone = make_embedder(HASHING)
    for t, vectors in zip(texts, got):
        assert np.array_equal(vectors, alone.embed(t))


def test_the_journal_holds_every_returned_vector_under_its_cache_key(tmp_path):
    from vdgr_core.embedding import embedding_key
    from vdgr_core.embedding_process import read_journal

    journal = str(tmp_path / "staging" / "journal.arrows")
    batches = [["Hold RESET for 10 seconds.", "DL_MIMO_Mode"], ["Wi-Fi Direct"]]
    with EmbedderProcess(HASHING, journal=journal) as child:
        vectors = [child.embed(b) for b in batches]
        assert child.embedded == 3
    rows = read_journal(journal)
    texts = [t for b in batches for t in b]
    assert rows.column("key").to_pylist() == [embedding_key(child.model_id, t) for t in texts]
    np.testing.assert_array_equal(np.array(rows.column("vector").to_pylist(), dtype=np.float32),
                                  np.concatenate(vectors))
    assert read_journal(str(tmp_path / "none.arrows")) is None


def test_a_journal_cut_short_keeps_its_whole_batches(tmp_path):
    from vdgr_core.embedding_process import read_journal

    journal = tmp_path / "journal.arrows"
    with EmbedderProcess(HASHING, journal=str(journal)) as child:
        child.embed(["one"])
        child.embed(["two", "three"])
    data = journal.read_bytes()
    journal.write_bytes(data[:-40])                  # the writer was killed mid-batch
    assert read_journal(str(journal)).num_rows == 1
