"""vdgr_core/store/table_indexes.py: the indexes each StoreConfig asks for, built as segments
over a real Lance table version in a temp folder and committed by metadata alone."""
import lancedb
import numpy as np
import pyarrow as pa
import pytest

from schemas.config import StoreConfig
from vdgr_core.store import table_indexes as ti
from vdgr_core.store.fragments import write_fragments
from vdgr_core.store.table_indexes import (VECTOR_INDEX, build_segments_here, commit_segments,
                                           describe_vector_index, index_tasks)
from vdgr_core.store.writer import _commit_table, TableChange

DIM = 16
ROWS = 600
SCHEMA = pa.schema([("chunk_id", pa.string()), ("vector", pa.list_(pa.float32(), DIM))])


@pytest.fixture()
def table(tmp_path):
    """A ``contents``-named table of ROWS rows in 3 fragments (every vector three times over, as
    versions of a manual repeat their paragraphs); its index folder, version and vectors."""
    rng = np.random.default_rng(7)
    base = rng.normal(size=(ROWS // 3, DIM)).astype(np.float32)
    vecs = np.concatenate([base, base, base + 1e-4])
    index = str(tmp_path)
    fragments = []
    for start in range(0, ROWS, ROWS // 3):
        part = pa.table({"chunk_id": [f"c{i:04d}" for i in range(start, start + ROWS // 3)],
                         "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs[start:start + ROWS // 3].ravel()),
                                                                     DIM)}, schema=SCHEMA)
        fragments += write_fragments(index, "contents", part, replace=True)
    write, _ = _commit_table(index, "contents", SCHEMA, TableChange(tuple(fragments), ROWS), None)
    return index, write.version, vecs


def _indexed(index, version, cfg):
    tasks = index_tasks(index, "contents", version, cfg, DIM, centroids_rel=lambda n: f"_scratch/{n}.npy")
    version = commit_segments(index, "contents", version, tasks, build_segments_here(index, tasks))
    return tasks, version, lancedb.connect(f"{index}/lance").open_table("contents")


@pytest.mark.parametrize("kind, lance_type", [("ivf_sq", "IVF_SQ"), ("ivf_hnsw_sq", "IVF_HNSW_SQ"),
                                              ("ivf_pq", "IVF_PQ")])
def test_the_configured_vector_index_is_built_and_described(table, kind, lance_type):
    index, version, _ = table
    cfg = StoreConfig(vector_index=kind, vector_index_min_rows=100, vector_rows_per_partition=128,
                      pq_sub_vectors=4, scalar_index_min_rows=ROWS + 1)
    tasks, version, t = _indexed(index, version, cfg)
    assert {x.kind for x in tasks} == {lance_type}
    desc = describe_vector_index(index, "contents", version, dict(tasks[0].params))
    assert desc["type"] == lance_type and desc["indexed_rows"] == ROWS and desc["unindexed_rows"] == 0
    assert desc["params"]["num_partitions"] == ROWS // 128
    assert VECTOR_INDEX in {i.name for i in t.list_indices()}


def test_ivf_sq_segments_share_centroids_and_find_the_exact_neighbours_of_repeated_vectors(table, monkeypatch):
    index, version, vecs = table
    monkeypatch.setattr(ti, "ROWS_PER_SEGMENT", ROWS // 3)       # one segment a fragment
    assert StoreConfig().vector_index == "ivf_sq"
    tasks, version, t = _indexed(index, version, StoreConfig(vector_index_min_rows=100, vector_rows_per_partition=128))
    vector_tasks = [x for x in tasks if x.name == VECTOR_INDEX]
    assert len(vector_tasks) == 3 and len({x.centroids for x in vector_tasks}) == 1
    assert t.index_stats(VECTOR_INDEX).num_indices == 3
    found = total = 0
    for q in vecs[:20]:
        exact = t.search(q).metric("cosine").limit(10).bypass_vector_index().to_arrow()["_distance"].to_pylist()
        got = t.search(q).metric("cosine").limit(10).nprobes(ROWS // 128).refine_factor(16).to_arrow()
        found += sum(1 for d in got["_distance"].to_pylist() if d <= exact[-1] + 1e-6)
        total += 10
    assert found == total         # every partition probed, full-vector re-ranking: exact


def test_the_centroids_are_trained_on_a_bounded_sample(table, monkeypatch):
    index, version, _ = table
    seen = []
    original = ti.train_centroids

    def spy(ds, partitions):
        out = original(ds, partitions)
        seen.append(out.shape)
        return out

    monkeypatch.setattr(ti, "train_centroids", spy)
    monkeypatch.setattr(ti, "TRAIN_SAMPLE_MAX_ROWS", 64)
    tasks, _, t = _indexed(index, version, StoreConfig(vector_index_min_rows=100, vector_rows_per_partition=128))
    assert seen == [(ROWS // 128, DIM)]
    assert t.index_stats(VECTOR_INDEX).num_indexed_rows == ROWS


def test_scalar_indexes_once_due_and_no_vector_index_on_a_small_table(table):
    index, version, _ = table
    tasks, _, t = _indexed(index, version, StoreConfig(vector_index_min_rows=ROWS + 1, scalar_index_min_rows=100))
    assert {x.name for x in tasks} == {"chunk_id_idx"}
    assert {i.name for i in t.list_indices()} == {"chunk_id_idx"}
    tasks, _, _ = _indexed(index, version, StoreConfig(vector_index="none", scalar_index_min_rows=ROWS + 1))
    assert tasks == []
