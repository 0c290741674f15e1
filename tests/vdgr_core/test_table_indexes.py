"""vdgr_core/store/table_indexes.py: the vector index each StoreConfig asks for, on a real
LanceDB table in a temp folder."""
import lancedb
import numpy as np
import pyarrow as pa
import pytest

from schemas.config import StoreConfig
from vdgr_core.store.table_indexes import VECTOR_INDEX, ensure_vector_index

DIM = 16
ROWS = 600


@pytest.fixture()
def table(tmp_path):
    rng = np.random.default_rng(7)
    base = rng.normal(size=(ROWS // 3, DIM)).astype(np.float32)
    # every vector three times over, as versions of a manual repeat their paragraphs
    vecs = np.concatenate([base, base, base + 1e-4])
    data = pa.table({"chunk_id": [f"c{i:04d}" for i in range(ROWS)],
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM)})
    return lancedb.connect(str(tmp_path)).create_table("contents", data), vecs


@pytest.mark.parametrize("kind, lance_type", [("ivf_sq", "IVF_SQ"), ("ivf_hnsw_sq", "IVF_HNSW_SQ"),
                                              ("ivf_pq", "IVF_PQ")])
def test_the_configured_vector_index_is_built_and_described(table, kind, lance_type):
    t, _ = table
    cfg = StoreConfig(vector_index=kind, vector_index_min_rows=100, vector_rows_per_partition=128,
                      pq_sub_vectors=4)
    desc = ensure_vector_index("contents", t, cfg, ROWS, DIM)
    assert desc["type"] == lance_type and desc["indexed_rows"] == ROWS
    assert desc["params"]["num_partitions"] == ROWS // 128
    assert VECTOR_INDEX in {i.name for i in t.list_indices()}


def test_ivf_sq_is_the_default_and_finds_the_exact_neighbours_of_repeated_vectors(table):
    t, vecs = table
    assert StoreConfig().vector_index == "ivf_sq"
    ensure_vector_index("contents", t, StoreConfig(vector_index_min_rows=100, vector_rows_per_partition=128),
                        ROWS, DIM)
    found = total = 0
    for q in vecs[:20]:
        exact = t.search(q).metric("cosine").limit(10).bypass_vector_index().to_arrow()["_distance"].to_pylist()
        got = t.search(q).metric("cosine").limit(10).nprobes(ROWS // 128).refine_factor(16).to_arrow()
        found += sum(1 for d in got["_distance"].to_pylist() if d <= exact[-1] + 1e-6)
        total += 10
    assert found == total         # every partition probed, full-vector re-ranking: exact


def test_a_small_table_gets_no_vector_index(table):
    t, _ = table
    assert ensure_vector_index("contents", t, StoreConfig(vector_index_min_rows=ROWS + 1), ROWS, DIM) is None
    assert ensure_vector_index("contents", t, StoreConfig(vector_index="none"), ROWS, DIM) is None
