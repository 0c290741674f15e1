"""Connections to an index's LanceDB database (vdgr_core/store/lance_store.py)."""
import numpy as np
import pyarrow as pa
import pytest

from vdgr_core.store.lance_store import DRIVER_CACHE_BYTES, connect, has_table, open_pinned


@pytest.mark.parametrize("cache_bytes", [1 << 20, DRIVER_CACHE_BYTES, None])
def test_a_connection_with_bounded_caches_reads_and_searches_every_row(tmp_path, cache_bytes):
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    data = pa.table({"id": pa.array([f"r{i:03d}" for i in range(300)]),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), 8)})
    db = connect(str(tmp_path), cache_bytes=cache_bytes)
    table = db.create_table("rows", data)
    first = table.version
    table.add(data.slice(0, 10))
    again = connect(str(tmp_path), cache_bytes=cache_bytes)
    assert has_table(again, "rows")
    pinned = open_pinned(again, "rows", first)
    assert pinned.count_rows() == 300
    hit = pinned.search(vectors[42]).metric("cosine").limit(1).select(["id"]).to_arrow()
    assert hit.column("id").to_pylist() == ["r042"]
