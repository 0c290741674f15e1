"""Texts sent ahead to an asynchronous embedder: same vectors, cached texts not sent, same index."""
from concurrent.futures import Future

import numpy as np
import pytest

from schemas.config import EmbeddingConfig
from vdgr_core.indexing.model_home import EmbeddingPrefetcher
from vdgr_core.embedding import make_embedder

HASHING = EmbeddingConfig(kind="hashing", dim=32)


class _AsyncHashing:
    """submit() like EmbedderProcess, answered at once; records what it was sent."""

    def __init__(self):
        self.inner = make_embedder(HASHING)
        self.sent: list[list[str]] = []

    def submit(self, texts):
        self.sent.append(list(texts))
        fut: Future = Future()
        fut.set_result(self.inner.embed(texts))
        return fut


class _Cache:
    def __init__(self, keys):
        self.keys = set(keys)

    def lookup(self, keys):
        return {k: np.zeros(32, np.float32) for k in keys if k in self.keys}


def test_prefetched_vectors_are_the_embedders_and_cached_texts_are_not_sent():
    emb = _AsyncHashing()
    pre = EmbeddingPrefetcher(emb, _Cache({"cached"}), window=3)
    texts = {"a": "alpha beta", "b": "gamma", "c": "delta epsilon zeta", "cached": "old text"}
    for key, text in texts.items():
        pre.offer(key, text)
    pre.offer("a", "alpha beta")                   # offered twice, sent once
    pre.flush()
    assert sorted(t for batch in emb.sent for t in batch) == sorted(["alpha beta", "gamma", "delta epsilon zeta"])
    assert [len(batch) for batch in emb.sent] == [3]        # the whole window in one request
    for key in ("a", "b", "c"):
        np.testing.assert_array_equal(pre.take(key), emb.inner.embed([texts[key]])[0])
    assert pre.take("a") is None                    # taken once
    assert pre.take("cached") is None


def test_a_build_with_texts_sent_ahead_equals_one_without(tmp_path, monkeypatch):
    from pipelines.run_build import run_build
    from schemas import tables as T
    from schemas.config import BuildConfig
    from tests.support.corpus import write_corpus
    from vdgr_core.indexing.model_home import provided_embedder
    from vdgr_core.embedding_process import EmbedderProcess
    from vdgr_core.store.reader import IndexReader
    from vdgr_core.store.writer import table_digest

    corpus = write_corpus(str(tmp_path / "corpus"))
    cfg = BuildConfig(corpus=corpus, index=str(tmp_path / "plain"), embedding=HASHING)
    run_build(cfg)
    ahead = cfg.model_copy(update={"index": str(tmp_path / "ahead")})
    taken = []
    real_take = EmbeddingPrefetcher.take

    def counting_take(self, key):
        vec = real_take(self, key)
        taken.append(vec is not None)
        return vec

    monkeypatch.setattr(EmbeddingPrefetcher, "take", counting_take)
    import vdgr_core.indexing.model_home as embed_module
    monkeypatch.setattr(embed_module, "_MEMO", embed_module.VectorMemo())   # as in a new process
    with EmbedderProcess(HASHING) as child, provided_embedder(HASHING, child):
        report = run_build(ahead)
    assert report.embeddings_computed > 0 and sum(taken) == report.embeddings_computed   # all sent ahead
    a, b = IndexReader(cfg.index), IndexReader(ahead.index)
    assert {n: table_digest(n, a.arrow(n)) for n in T.TABLES} == {n: table_digest(n, b.arrow(n)) for n in T.TABLES}


def test_a_text_met_again_after_its_vector_was_taken_is_not_sent_again():
    from vdgr_core.indexing.model_home import _MEMO

    emb = _AsyncHashing()
    pre = EmbeddingPrefetcher(emb, _Cache(set()), window=1)
    pre.offer("again-key", "repeated manual text")
    vec = pre.take("again-key")
    assert vec is not None and len(emb.sent) == 1
    _MEMO.put("again-key", vec)            # what the embedding step does with a taken vector
    pre.offer("again-key", "repeated manual text")
    pre.flush()
    assert len(emb.sent) == 1              # not embedded a second time
    assert pre.take("again-key") is None   # the embedding step then reads the memo


def test_a_text_taken_while_still_in_the_window_is_sent_once():
    emb = _AsyncHashing()
    pre = EmbeddingPrefetcher(emb, _Cache(set()), window=100)
    pre.offer("k1", "first text")
    pre.offer("k2", "second text")
    assert emb.sent == []                       # still waiting in the window
    vec = pre.take("k1")
    assert vec is not None
    np.testing.assert_array_equal(vec, emb.inner.embed(["first text"])[0])
    pre.flush()
    assert sorted(t for batch in emb.sent for t in batch) == ["first text", "second text"]   # each once


def test_a_small_window_waits_for_more_texts_unless_the_embedder_is_idle():
    class Busy(_AsyncHashing):
        busy = True

        def idle(self):
            return not self.busy

    emb = Busy()
    pre = EmbeddingPrefetcher(emb, _Cache(set()), window=100)
    pre.offer("k1", "first text")
    assert pre.flush(at_least=2) is False and emb.sent == []       # one text: kept for a larger request
    pre.offer("k2", "second text")
    assert pre.flush(at_least=2) is True and emb.sent == [["first text", "second text"]]
    pre.offer("k3", "third text")
    emb.busy = False
    assert pre.flush(at_least=2) is True and emb.sent[-1] == ["third text"]   # idle: sent at once


def test_texts_go_without_a_full_window_when_the_embedder_has_nothing_to_do(monkeypatch):
    class Child(_AsyncHashing):
        busy = False

        def idle(self):
            return not self.busy

    monkeypatch.setattr(EmbeddingPrefetcher, "START_AT", 2)
    emb = Child()
    pre = EmbeddingPrefetcher(emb, _Cache(set()), window=100)
    pre.offer("k1", "first text")
    assert emb.sent == []                                   # fewer than START_AT: waits
    pre.offer("k2", "second text")
    assert emb.sent == [["first text", "second text"]]      # idle: sent without a full window
    emb.busy = True
    for i in range(3, 6):
        pre.offer(f"k{i}", f"text {i}")
    assert len(emb.sent) == 1                               # busy: they wait for the window


def test_batches_are_taken_only_behind_a_request_sent_after_them(tmp_path, monkeypatch):
    """The child embeds the newest request while the pipeline makes the next batches; no
    request but the last is smaller than MIN_REQUEST."""
    from schemas.config import BuildConfig
    from transforms.embed import _EmbedBatchesDoFn
    from vdgr_core.indexing.model_home import BatchEmbedding, prefetcher_for, provided_embedder
    from vdgr_core.embedding import embedding_key

    events = []

    class Busy(_AsyncHashing):
        def submit(self, texts):
            events.append(("send", len(texts)))
            return super().submit(texts)

        def idle(self):
            return False

    real_take = EmbeddingPrefetcher.take
    monkeypatch.setattr(EmbeddingPrefetcher, "take",
                        lambda self, key: (events.append(("take", key)), real_take(self, key))[1])
    monkeypatch.setattr(BatchEmbedding, "MIN_REQUEST", 6)
    cfg = BuildConfig(corpus=str(tmp_path), index=str(tmp_path / "index"), embedding=HASHING)
    emb = Busy()
    with provided_embedder(HASHING, emb):
        pre = prefetcher_for(cfg.slices.embed)
        dofn = _EmbedBatchesDoFn(cfg.slices.embed, lambda item, vec: (item, vec), buffer_size=2)
        dofn.setup()
        dofn.start_bundle()
        rows = []
        for i in range(20):
            text = f"text number {i}"
            key = embedding_key("hashing:v1:32", text)
            pre.offer(key, text)                        # what the prefetch step upstream does
            rows += [r for r in dofn.process((key, text, i)) if not hasattr(r, "tag")]
        rows += [r.value for r in dofn.finish_bundle() if not hasattr(r, "tag")]
    assert sorted(item for item, _ in rows) == list(range(20))
    for item, vec in rows:
        np.testing.assert_array_equal(vec, emb.inner.embed([f"text number {item}"])[0])
    sends = [n for kind, n in events if kind == "send"]
    assert all(n >= 6 for n in sends[:-1]) and sum(sends) == 20
    first_take = next(i for i, (kind, _) in enumerate(events) if kind == "take")
    assert [kind for kind, _ in events[:first_take]].count("send") >= 2     # taken behind the next request


@pytest.mark.parametrize("embed_last", [True, False])
def test_directories_are_summarized_before_the_build_waits_for_chunk_vectors(tmp_path, monkeypatch, embed_last):
    """With ``embed_last`` (the in-process runner) the text-only steps run while the child
    embeds: every directory text is sent ahead before the first chunk vector is taken, and the
    index is the same as without it (where directories come after)."""
    import pipelines.run_build as run_build_module
    from schemas import tables as T
    from schemas.config import BuildConfig
    from tests.support.corpus import write_corpus
    from vdgr_core.indexing.model_home import provided_embedder
    from vdgr_core.embedding import embedding_key
    from vdgr_core.embedding_process import EmbedderProcess
    from vdgr_core.indexing.rows import content_embedding_text
    from vdgr_core.store.reader import IndexReader
    from vdgr_core.store.writer import table_digest

    corpus = write_corpus(str(tmp_path / "corpus"))
    events = []
    real_offer, real_take = EmbeddingPrefetcher.offer, EmbeddingPrefetcher.take
    monkeypatch.setattr(EmbeddingPrefetcher, "offer",
                        lambda self, key, text: (events.append(("offer", key)), real_offer(self, key, text))[1])
    monkeypatch.setattr(EmbeddingPrefetcher, "take",
                        lambda self, key: (events.append(("take", key)), real_take(self, key))[1])
    monkeypatch.setattr(run_build_module, "runs_in_this_process", lambda _options: embed_last)
    import vdgr_core.indexing.model_home as embed_module
    monkeypatch.setattr(embed_module, "_MEMO", embed_module.VectorMemo())   # as in a new process
    cfg = BuildConfig(corpus=corpus, index=str(tmp_path / "index"), embedding=HASHING)
    with EmbedderProcess(HASHING) as child, provided_embedder(HASHING, child):
        run_build_module.run_build(cfg)

    reader = IndexReader(cfg.index)
    model_id = make_embedder(HASHING).model_id
    chunk_keys = {embedding_key(model_id, content_embedding_text(r["path"], r["text"]))
                  for r in reader.arrow(T.CONTENTS, ["path", "text"]).to_pylist()}
    offered = [key for kind, key in events if kind == "offer"]
    directory_keys = set(offered) - chunk_keys
    assert directory_keys
    last_directory_offer = max(i for i, (kind, key) in enumerate(events) if kind == "offer" and key in directory_keys)
    first_chunk_take = min(i for i, (kind, key) in enumerate(events) if kind == "take" and key in chunk_keys)
    assert (last_directory_offer < first_chunk_take) is embed_last

    # the same index from the other order, without a child
    plain = BuildConfig(corpus=corpus, index=str(tmp_path / "plain"), embedding=HASHING)
    monkeypatch.setattr(embed_module, "_MEMO", embed_module.VectorMemo())
    monkeypatch.setattr(run_build_module, "runs_in_this_process", lambda _options: not embed_last)
    run_build_module.run_build(plain)
    other = IndexReader(plain.index)
    assert {n: table_digest(n, reader.arrow(n)) for n in T.TABLES} == {n: table_digest(n, other.arrow(n)) for n in T.TABLES}
