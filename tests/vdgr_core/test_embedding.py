"""Embedders: the hashing fake, the OpenAI-compatible endpoint, and (integration) MiniLM."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from schemas.config import EmbeddingConfig
from schemas.errors import ConfigError
from vdgr_core.embedding import (
    Embedder,
    EmbeddingError,
    HashingEmbedder,
    OpenAIEmbedder,
    embedding_key,
    make_embedder,
)


def _unit_rows(mat: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(mat, axis=1), 1.0, atol=1e-5))


def test_hashing_deterministic_normalized_shape():
    emb = HashingEmbedder(dim=64)
    texts = ["Reset the router", "battery charging time", "", "!!!"]
    a, b = emb.embed(texts), HashingEmbedder(dim=64).embed(texts)
    assert a.dtype == np.float32 and a.shape == (4, 64)
    assert np.array_equal(a, b)
    assert _unit_rows(a)
    assert emb.embed([]).shape == (0, 64)
    assert isinstance(emb, Embedder)


def test_hashing_similarity_ordering():
    emb = HashingEmbedder()
    q, near, far = emb.embed([
        "reset the router to factory settings",
        "how to reset the router to factory defaults",
        "battery charging time of the remote",
    ])
    assert float(q @ near) > float(q @ far)
    assert float(q @ q) == pytest.approx(1.0, abs=1e-5)


def test_embedding_key_and_registry():
    assert embedding_key("m", "t") == embedding_key("m", "t")
    assert embedding_key("m", "t") != embedding_key("m2", "t")
    assert len(embedding_key("m", "t")) == 64
    emb = make_embedder(EmbeddingConfig(kind="hashing", dim=32))
    assert isinstance(emb, HashingEmbedder) and emb.dim == 32


def test_import_does_not_load_torch():
    code = "import sys, vdgr_core.embedding; assert 'torch' not in sys.modules; assert 'apache_beam' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def _openai_cfg(server, **kw) -> EmbeddingConfig:
    return EmbeddingConfig(kind="openai", base_url=server.url, model="embed-test", dim=8, **kw)


def test_openai_embedder_batches_and_normalizes(openai_server):
    emb = make_embedder(_openai_cfg(openai_server, batch_size=2))
    assert isinstance(emb, OpenAIEmbedder) and emb.model_id == "openai:embed-test:8"
    out = emb.embed(["a", "b", "c", "a"])
    assert out.shape == (4, 8) and out.dtype == np.float32 and _unit_rows(out)
    assert np.allclose(out[0], out[3])
    reqs = [r for r in openai_server.requests if r["_path"].endswith("/embeddings")]
    assert [r["input"] for r in reqs] == [["a", "b"], ["c", "a"]]
    assert emb.embed([]).shape == (0, 8)


def test_openai_embedder_retries_then_fails(openai_server):
    default = openai_server.default_responder
    replies = [(503, "busy")]

    def responder(req):
        return replies.pop(0) if replies else default(req)

    openai_server.responder = responder
    delays: list[float] = []
    emb = OpenAIEmbedder(_openai_cfg(openai_server), backoff_s=0.1, sleep=delays.append)
    assert emb.embed(["x"]).shape == (1, 8)
    assert emb.calls == 2 and delays == [0.1]

    openai_server.responder = lambda req: (401, "bad key")
    with pytest.raises(EmbeddingError):
        emb.embed(["x"])
    assert emb.calls == 3


def test_openai_embedder_wrong_dimension(openai_server):
    emb = OpenAIEmbedder(EmbeddingConfig(kind="openai", base_url=openai_server.url, model="m", dim=16))
    with pytest.raises(EmbeddingError):
        emb.embed(["x"])


@pytest.mark.integration
def test_minilm_real_model_semantics():
    emb = make_embedder(EmbeddingConfig(kind="minilm", precision="bf16"))
    assert emb.model_id == "minilm:all-MiniLM-L6-v2:bf16:packed1" and emb.dim == 384
    q, near, far = emb.embed([
        "reset the router to factory settings",
        "restore factory defaults of the router",
        "battery charging time",
    ])
    assert float(q @ near) > float(q @ far)
    out = emb.embed(["one", "two words", "a somewhat longer sentence about firmware updates"])
    assert out.shape == (3, 384) and out.dtype == np.float32 and _unit_rows(out)
    assert emb.embed([]).shape == (0, 384)


@pytest.mark.integration
def test_minilm_fp32_and_dimension_check():
    fp32 = make_embedder(EmbeddingConfig(kind="minilm", precision="fp32"))
    assert fp32.model_id.endswith(":fp32:packed1")
    assert _unit_rows(fp32.embed(["hello"]))
    with pytest.raises(ConfigError):
        make_embedder(EmbeddingConfig(kind="minilm", dim=128))


@pytest.mark.parametrize("precision", ["fp32", "bf16", "int8"])
def test_minilm_vector_does_not_depend_on_its_batch(precision):
    """A text's vector is the same bits alone, among neighbours of other counts and lengths,
    and on one thread or all: every model call of one padded length has one shape."""
    import torch

    emb = make_embedder(EmbeddingConfig(kind="minilm", precision=precision))
    target = "Wireless PowerShare lets the phone charge another device placed on its back."
    others = [f"Filler sentence number {i} " + "with more words " * (i % 23) for i in range(70)]
    alone = emb.embed([target])[0]
    for batch in ([target] + others[:3], others[:40] + [target] + others[40:], [target] * 5 + others):
        got = emb.embed(batch)
        np.testing.assert_array_equal(got[batch.index(target)], alone)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        np.testing.assert_array_equal(emb.embed(others[:10] + [target])[-1], alone)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_calls_on_a_pool_of_single_threaded_workers_give_the_same_bits(precision):
    """Several model calls at once, each on one thread, equal one call at a time on torch's
    threads, whatever the number of workers (bf16: autocast is per thread, so a pool thread
    must enter it too), and the caller's thread count is kept."""
    import torch

    emb = make_embedder(EmbeddingConfig(kind="minilm", precision=precision))
    texts = [f"Sentence {i} about charging " + "and pairing devices " * (i % 40) for i in range(60)]
    assert len(emb.packs([len(x) for x in emb._model.token_ids(texts)])) > 2     # several calls
    workers, threads = emb.workers, torch.get_num_threads()
    try:
        emb.workers = 1
        one_at_a_time = emb.embed(texts)
        for n in (2, 3):
            emb.workers = n
            np.testing.assert_array_equal(emb.embed(texts), one_at_a_time)
            assert torch.get_num_threads() == threads
    finally:
        emb.workers = workers


def test_a_failing_call_on_the_pool_raises_and_the_next_embed_works(monkeypatch):
    emb = make_embedder(EmbeddingConfig(kind="minilm", precision="int8"))
    texts = [f"Sentence {i} " + "about pairing " * (i % 50) for i in range(80)]
    want = emb.embed(texts)
    workers, real = emb.workers, emb._encode_packed
    seen = []

    def second_fails(ids):
        seen.append(1)
        if len(seen) == 2:
            raise RuntimeError("out of memory in a model call")
        return real(ids)

    emb.workers = 2
    monkeypatch.setattr(emb, "_encode_packed", second_fails)
    try:
        with pytest.raises(RuntimeError, match="out of memory"):
            emb.embed(texts)
        monkeypatch.setattr(emb, "_encode_packed", real)
        np.testing.assert_array_equal(emb.embed(texts), want)
    finally:
        emb.workers = workers


def test_minilm_packs_texts_end_to_end_into_calls_of_one_row_count():
    from vdgr_core.embedding import PACK_TOKENS

    emb = make_embedder(EmbeddingConfig(kind="minilm", precision="fp32"))
    assert emb.batching == "packed"
    lengths = [3, 16, 17, 40, 256, 255, 9] * 30
    packs = emb.packs(lengths)
    assert sorted(i for idx in packs for i in idx) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in idx) <= PACK_TOKENS["fp32"] for idx in packs)
    # first fit by decreasing length: every call but the last is nearly full
    assert len(packs) <= -(-sum(lengths) // PACK_TOKENS["fp32"]) + 1


def test_a_packed_text_equals_its_own_forward_pass():
    """Packing changes the calls, not the model: a text's packed vector matches the padded,
    masked batch of the fixed-shape scheme to float32 rounding."""
    emb = make_embedder(EmbeddingConfig(kind="minilm", precision="fp32"))
    texts = ["Hold WPS for 5 seconds, then press power.", "Battery", "a b c " * 60]
    packed = emb.embed(texts)
    emb.batching = "fixed"
    np.testing.assert_allclose(emb.embed(texts), packed, atol=2e-6)


def test_a_model_transformers_runs_keeps_fixed_shape_calls(tmp_path):
    from vdgr_core.embedding import _call_scheme

    (tmp_path / "config.json").write_text('{"model_type": "roberta"}')
    assert _call_scheme(EmbeddingConfig(kind="minilm", model_path=str(tmp_path))) == "calls1"
    assert _call_scheme(EmbeddingConfig(kind="minilm")) == "packed1"


def test_minilm_calls_have_one_shape_per_padded_length():
    from vdgr_core.embedding import CALL_TOKENS, LENGTH_STEP

    emb = make_embedder(EmbeddingConfig(kind="minilm", precision="fp32"))
    emb.batching = "fixed"
    lengths = [3, 16, 17, 40, 256, 255, 9] * 30
    calls = emb.calls(lengths)
    assert sorted(i for _, _, idx in calls for i in idx) == list(range(len(lengths)))
    for rows, length, idx in calls:
        assert length % LENGTH_STEP == 0 and rows == max(1, CALL_TOKENS["fp32"] // length)
        assert 0 < len(idx) <= rows and all(length - LENGTH_STEP < lengths[i] <= length for i in idx)
    # free batching (the bench's comparison) pads each batch_size group to its longest text
    emb.batching = "free"
    assert all(len(idx) <= emb._batch_size and length == max(lengths[i] for i in idx)
               for _, length, idx in emb.calls(lengths))


def test_query_vectors_are_float32_whatever_the_cpu_and_stay_close_to_the_index_mode():
    from vdgr_core.embedding import embed_query

    emb = make_embedder(EmbeddingConfig(precision="bf16"))
    fp32 = make_embedder(EmbeddingConfig(precision="fp32"))
    texts = ["How do I pair Bluetooth headphones?", "battery"]
    stored = emb.embed(texts)
    query = embed_query(emb, texts)
    np.testing.assert_allclose(query, fp32.embed(texts), atol=2e-6)     # float32 numerics
    cos = np.sum(query * stored, axis=1)
    assert _unit_rows(query) and not np.array_equal(query, stored) and (cos > 0.999).all()
    assert np.array_equal(emb.embed(texts), stored)    # what the index stores never changes
    assert embed_query(HashingEmbedder(dim=32), texts).shape == (2, 32)   # no embed_query: embed

def test_int8_stores_close_vectors_and_asks_in_float32():
    """int8 is its own model id; its stored vectors stay within 1e-2 cosine of float32 and
    rank like them; its query vectors are the float32 ones."""
    from vdgr_core.embedding import embed_query

    int8 = make_embedder(EmbeddingConfig(precision="int8"))
    fp32 = make_embedder(EmbeddingConfig(precision="fp32"))
    assert int8.model_id == "minilm:all-MiniLM-L6-v2:int8:packed1-int8v2"
    texts = ["reset the router to factory settings", "restore factory defaults of the router",
             "battery charging time", "The DL_MIMO_Mode scheduler drives the radio. " * 12]
    stored, exact = int8.embed(texts), fp32.embed(texts)
    assert _unit_rows(stored) and not np.array_equal(stored, exact)
    assert (np.sum(stored * exact, axis=1) > 0.99).all()
    assert float(stored[0] @ stored[1]) > float(stored[0] @ stored[2])
    np.testing.assert_array_equal(embed_query(int8, texts), embed_query(fp32, texts))


def test_int8_weights_are_made_on_the_first_stored_text_only(monkeypatch):
    import vdgr_core.bert_int8 as bert_int8

    made = []

    class Counting(bert_int8.Int8BertEncoder):
        def __init__(self, *args, **kwargs):
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(bert_int8, "Int8BertEncoder", Counting)
    emb = make_embedder(EmbeddingConfig(precision="int8"))
    emb.embed_query(["how do I reset the router"])        # a query process: float32, no calibration
    assert made == []
    first = emb.embed(["Reset the router with the pin button."])
    again = emb.embed(["Reset the router with the pin button.", "Another text."])
    assert made == [1] and np.array_equal(first[0], again[0])


def test_int8_weights_are_made_once_when_pool_threads_ask_together(monkeypatch):
    """The first stored texts reach the int8 encoder from several pool threads at once: the
    first builds it, the others wait and use it."""
    import torch

    import vdgr_core.bert_int8 as bert_int8
    from vdgr_core.embedding import _load_transformer, _model_folder

    made, inside, release = [], threading.Event(), threading.Event()

    class Held(bert_int8.Int8BertEncoder):
        def __init__(self, *args, **kwargs):
            made.append(threading.get_ident())
            inside.set()
            release.wait()
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(bert_int8, "Int8BertEncoder", Held)
    model = _load_transformer(_model_folder(EmbeddingConfig()), 256, "int8")
    ids = torch.tensor(model.token_ids(["Reset the router."])[0])
    out: list = []
    threads = [threading.Thread(target=lambda: out.append(model.packed(ids, [(0, len(ids))]))) for _ in range(3)]
    threads[0].start()
    assert inside.wait(timeout=120)      # the first thread is building the encoder
    for t in threads[1:]:
        t.start()
    release.set()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(out) == 3
    assert all(torch.equal(o, out[0]) for o in out)


def test_int8_needs_the_plain_torch_encoder(tmp_path):
    from vdgr_core.embedding import _load_transformer

    (tmp_path / "config.json").write_text('{"model_type": "roberta"}')
    with pytest.raises(ConfigError, match="int8 embeddings need a BERT folder"):
        _load_transformer(tmp_path, 256, "int8")


def test_auto_precision_follows_the_cpu_and_resolves_once(monkeypatch):
    import vdgr_core.cpu as cpu
    from vdgr_core.embedding import embedder_identity, resolve_precision

    # int8 where the CPU has AVX2 but no native bf16; float32 where it has neither
    for flags, expected in ((frozenset({"avx2", "avx512f"}), "int8"), (frozenset({"avx2", "amx_bf16"}), "bf16"),
                            (frozenset({"avx512_bf16"}), "bf16"), (frozenset({"neon", "asimd"}), "fp32"),
                            (frozenset(), "fp32")):
        monkeypatch.setattr(cpu, "_cpuinfo", lambda flags=flags: ("test cpu", flags))
        resolved = resolve_precision(EmbeddingConfig())
        assert resolved.precision == expected
        scheme = "packed1-int8v2" if expected == "int8" else "packed1"     # int8's kernels: fbgemm
        assert embedder_identity(EmbeddingConfig())[0] == f"minilm:all-MiniLM-L6-v2:{expected}:{scheme}"
        # an explicit or recorded precision is never re-resolved on another host
        assert resolve_precision(EmbeddingConfig(precision="bf16")).precision == "bf16"


def test_auto_is_float32_for_a_model_int8_cannot_run(monkeypatch, tmp_path):
    import vdgr_core.cpu as cpu
    from vdgr_core.embedding import host_precision, resolve_precision

    (tmp_path / "config.json").write_text('{"model_type": "roberta"}')     # not the plain-torch encoder
    monkeypatch.setattr(cpu, "_cpuinfo", lambda: ("test cpu", frozenset({"avx2", "fma"})))
    assert host_precision() == "int8"
    assert resolve_precision(EmbeddingConfig(model_path=str(tmp_path))).precision == "fp32"


def test_recorded_bf16_flag_reads_as_precision():
    # settings recorded before `precision` existed
    assert EmbeddingConfig.model_validate({"kind": "minilm", "bf16": True}).precision == "bf16"
    assert EmbeddingConfig.model_validate({"kind": "minilm", "bf16": False}).precision == "fp32"
    with pytest.raises(ValueError):
        EmbeddingConfig(precision="fp16")


def test_embedding_config_for_an_index():
    cfg = EmbeddingConfig.for_index("minilm:all-MiniLM-L6-v2:fp32", 384)
    assert (cfg.kind, cfg.precision, cfg.dim) == ("minilm", "fp32", 384)
    assert EmbeddingConfig.for_index("minilm:all-MiniLM-L6-v2:bf16", 384).precision == "bf16"
    assert EmbeddingConfig.for_index("minilm:all-MiniLM-L6-v2:fp32:calls1", 384).precision == "fp32"
    assert EmbeddingConfig.for_index("minilm:all-MiniLM-L6-v2:int8:packed1", 384).precision == "int8"
    assert EmbeddingConfig.for_index("minilm:all-MiniLM-L6-v2:int8:packed1-int8v2", 384).precision == "int8"
    assert EmbeddingConfig.for_index("hashing:v1:64", 64).kind == "hashing"
    # flags given on the command line win over the recorded identity
    assert EmbeddingConfig.for_index("minilm:x:bf16", 384, precision="fp32", dim=None).precision == "fp32"
    assert EmbeddingConfig.for_index("hashing:v1:64", 64, dim=32).dim == 32


def test_an_index_of_another_call_scheme_is_queried_by_the_same_model_only():
    from vdgr_core.embedding import same_model

    assert same_model("minilm:all-MiniLM-L6-v2:bf16", "minilm:all-MiniLM-L6-v2:bf16:calls1")
    assert not same_model("minilm:all-MiniLM-L6-v2:bf16", "minilm:all-MiniLM-L6-v2:fp32:calls1")
    assert not same_model("minilm:other:fp32:calls1", "minilm:all-MiniLM-L6-v2:fp32:calls1")
    assert same_model("hashing:v1:32", "hashing:v1:32") and not same_model("hashing:v1:32", "hashing:v1:64")


def test_emulated_bf16_is_said_once_with_the_measured_rate(monkeypatch, caplog):
    import logging

    import vdgr_core.cpu as cpu

    monkeypatch.setattr(cpu, "_cpuinfo", lambda: ("test cpu", frozenset({"avx2"})))
    emb = make_embedder(EmbeddingConfig(precision="bf16"))          # an index's recorded precision
    texts = [f"text number {i} about the router" for i in range(20)]
    with caplog.at_level(logging.WARNING, logger="vdgr.embedding"):
        emb.embed(texts)
        emb.embed(texts)
    said = [r.getMessage() for r in caplog.records if r.name == "vdgr.embedding"]
    assert len(said) == 1 and "texts/s" in said[0] and "--embedding-precision auto (int8 on this CPU)" in said[0]
    assert make_embedder(EmbeddingConfig(precision="fp32"))._emulated_bf16 is False


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_a_forked_process_embeds_on_a_pool_of_its_own():
    """A process forked after the embedder's pool started inherits the executor but none of
    its threads; it must not queue calls that no thread will run."""
    import signal

    emb = make_embedder(EmbeddingConfig(kind="minilm", precision="int8"))
    texts = [f"Sentence {i} " + "about pairing " * (i % 50) for i in range(80)]
    assert len(emb.packs([len(x) for x in emb._model.token_ids(texts)])) > 2
    workers = emb.workers
    emb.workers = 2
    try:
        want = emb.embed(texts)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:                                  # the child: embed, report, leave at once
            signal.alarm(60)                          # a call no thread runs: end, not hang
            try:
                ok = np.array_equal(emb.embed(texts), want)
                os.write(write, b"1" if ok else b"0")
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            got = f.read()
        os.waitpid(pid, 0)
        assert got == b"1"
    finally:
        emb.workers = workers
