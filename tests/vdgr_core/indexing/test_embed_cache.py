"""The embedding cache table (vdgr_core/indexing/embed_cache.py): each key once, found again."""
import hashlib

import numpy as np
import pyarrow as pa

from pipelines.run_build import run_build
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig
from vdgr_core.indexing import model_home as embed
from tests.support.corpus import write_corpus
from vdgr_core.indexing.embed_cache import (EmbeddingCache, _FirstOffers, append_batches_to_cache,
                                            append_to_cache)
from vdgr_core.store.lance_store import connect

DIM = 4


def _key(i: int) -> str:
    return hashlib.sha256(f"text {i}".encode()).hexdigest()


def _rows(ids) -> pa.Table:
    vectors = np.array([[i, i + 0.5, -i, 1.0] for i in ids], dtype=np.float32)
    return pa.table({"key": pa.array([_key(i) for i in ids]),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM)})


def _cached_keys(index) -> list[str]:
    return connect(index).open_table(T.EMBEDDING_CACHE).to_arrow().column("key").to_pylist()


def test_rows_offered_twice_are_cached_once(tmp_path):
    index = str(tmp_path)
    assert append_to_cache(index, _rows([1, 2, 2, 3, 1]), DIM) == 3
    assert sorted(_cached_keys(index)) == sorted(_key(i) for i in (1, 2, 3))
    assert append_to_cache(index, _rows([3, 4, 4, 5]), DIM) == 3         # 3 is held already
    assert sorted(_cached_keys(index)) == sorted(_key(i) for i in (1, 2, 3, 4, 5))
    found = EmbeddingCache(index).lookup([_key(4), _key(9)])
    assert list(found) == [_key(4)] and found[_key(4)].tolist() == [4.0, 4.5, -4.0, 1.0]


def test_streamed_batches_repeating_keys_across_batches_are_cached_once(tmp_path):
    index = str(tmp_path)
    batches = [b for part in ([1, 2, 3], [3, 4], [], [1, 5, 5]) for b in _rows(part).to_batches()]
    assert append_batches_to_cache(index, iter(batches), DIM) == 5
    assert sorted(_cached_keys(index)) == sorted(_key(i) for i in range(1, 6))
    assert append_batches_to_cache(index, iter(_rows([5, 6]).to_batches()), DIM) == 2
    assert sorted(_cached_keys(index)) == sorted(_key(i) for i in range(1, 7))


def test_first_offers_keep_the_first_row_of_each_key_over_many_batches():
    rng = np.random.default_rng(3)
    first, seen, kept, offered = _FirstOffers(), set(), [], []
    for _ in range(40):                                  # enough batches to merge runs
        ids = rng.integers(0, 500, size=int(rng.integers(0, 60))).tolist()
        offered.extend(ids)
        for b in _rows(ids).to_batches():
            kept.extend(first.select(b).column(0).to_pylist())
    expected = []
    for i in offered:
        if i not in seen:
            seen.add(i)
            expected.append(_key(i))
    assert sorted(kept) == sorted(expected) and len(kept) == len(set(kept))


def test_keys_that_are_not_hex_digests_are_told_apart_too():
    first = _FirstOffers()
    batch = pa.record_batch({"key": pa.array(["plain", "other", "plain"])})
    assert first.select(batch).column(0).to_pylist() == ["plain", "other"]


def test_a_build_of_versions_repeating_a_text_caches_it_once(tmp_path, monkeypatch):
    # a process memo of one vector: the repeats are embedded again, as in a build whose
    # versions lie further apart than the memo holds
    monkeypatch.setattr(embed, "_MEMO", embed.VectorMemo(size=1))
    same = "# Reset\n\nHold the power button for ten seconds to reset the router.\n"
    corpus = write_corpus(str(tmp_path / "corpus"), {
        "net/v1/_meta.yaml": "version: '1'\n", "net/v1/reset.md": same,
        "net/v2/_meta.yaml": "version: '2'\n", "net/v2/reset.md": same})
    index = str(tmp_path / "index")
    report = run_build(BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing")))
    keys = _cached_keys(index)
    assert report.embeddings_computed > 0
    assert len(keys) == len(set(keys))
    assert len(keys) < report.embeddings_computed + report.embeddings_from_cache    # the repeats
