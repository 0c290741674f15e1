"""vdgr_core/store/index_beside.py: vector indexes trained in a child process while the commit
goes on, on real LanceDB tables in a temp folder."""
import multiprocessing

import numpy as np
import pyarrow as pa
import pytest

from schemas.config import StoreConfig
from vdgr_core.store.index_beside import build_vector_indexes, vector_indexes_beside, vector_indexes_due
from vdgr_core.store.lance_store import TableWrite, connect
from vdgr_core.store.table_indexes import VECTOR_INDEX

DIM = 16
ROWS = 600
CFG = StoreConfig(vector_index_min_rows=100, vector_rows_per_partition=128)


def _index(folder: str) -> dict[str, TableWrite]:
    db = connect(folder)
    rng = np.random.default_rng(7)
    writes = {}
    for name, rows in (("contents", ROWS), ("directories", ROWS // 2), ("entities", 50)):
        vecs = rng.normal(size=(rows, DIM)).astype(np.float32)
        t = db.create_table(name, pa.table({"id": [f"{name}{i:04d}" for i in range(rows)],
                                            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM)}))
        writes[name] = TableWrite(name, t.version, rows)
    return writes


def _children() -> list[str]:
    return [p.name for p in multiprocessing.active_children()]


def test_the_child_builds_what_this_process_would(tmp_path):
    beside, here = str(tmp_path / "beside"), str(tmp_path / "here")
    writes = _index(beside)
    _index(here)
    assert vector_indexes_due(writes, CFG) == ["contents", "directories"]     # entities: 50 rows
    with vector_indexes_beside(beside, writes, CFG, DIM) as got:
        assert "vdgr-vector-index" in _children()
        # the block reads the tables meanwhile, as the layouts do
        assert connect(beside).open_table("contents").count_rows() == ROWS
    assert "vdgr-vector-index" not in _children()
    expected = build_vector_indexes(here, ["contents", "directories", "entities"],
                                    {n: w.rows for n, w in writes.items()}, CFG, DIM)
    assert got.described == expected
    assert got.described["contents"]["type"] == "IVF_SQ" and got.described["entities"] is None
    assert VECTOR_INDEX in {i.name for i in connect(beside).open_table("directories").list_indices()}


def test_nothing_due_starts_no_child(tmp_path):
    writes = _index(str(tmp_path))
    with vector_indexes_beside(str(tmp_path), writes, StoreConfig(), DIM) as got:
        assert "vdgr-vector-index" not in _children()
    assert got.described == {"contents": None, "directories": None, "entities": None}


def test_an_error_in_the_child_is_raised_here(tmp_path):
    writes = _index(str(tmp_path))
    bad = StoreConfig(vector_index="ivf_pq", pq_sub_vectors=5, vector_index_min_rows=100,
                      vector_rows_per_partition=128)                 # 16 dimensions do not split in 5
    with pytest.raises(Exception, match="(?i)sub.?vector|divisible|dimension"):
        with vector_indexes_beside(str(tmp_path), writes, bad, DIM):
            pass
    assert "vdgr-vector-index" not in _children()


def test_leaving_the_block_early_stops_the_child(tmp_path):
    writes = _index(str(tmp_path))
    with pytest.raises(KeyboardInterrupt):
        with vector_indexes_beside(str(tmp_path), writes, CFG, DIM):
            raise KeyboardInterrupt
    assert "vdgr-vector-index" not in _children()
