"""The rows a layout is built from: an update's delta applied to them equals a rebuild's rows,
vectors included (vdgr_core/store/layout_rows.py)."""
import numpy as np
import pyarrow as pa

from vdgr_core.store.layout_rows import DomainDelta, apply_delta, domain_rows

DIM = 4
_EMPTY = pa.table({"entity_id": pa.array([], pa.string()), "name": pa.array([], pa.string()),
                   "norm": pa.array([], pa.string())})
_NO_EDGES = pa.table({"kind": pa.array([], pa.string()), "src": pa.array([], pa.string()),
                      "dst": pa.array([], pa.string()), "weight": pa.array([], pa.float64())})


def _vector(seed: int, dim: int = DIM) -> list[float]:
    return [float(seed * 10 + i) for i in range(dim)]


def _contents(ids, dim: int = DIM, vectors: bool = True) -> pa.Table:
    cols = {"chunk_id": pa.array(ids, pa.string()), "text": pa.array([f"text {i}" for i in ids], pa.string()),
            "source": pa.array(["a.md"] * len(ids), pa.string())}
    if vectors:
        flat = pa.array([x for i in ids for x in _vector(int(i), dim)], pa.float32())
        cols["vector"] = pa.FixedSizeListArray.from_arrays(flat, dim)
    return pa.table(cols)


def _dirs(ids) -> pa.Table:
    flat = pa.array([x for i in ids for x in _vector(100 + int(i))], pa.float32())
    return pa.table({"node_id": pa.array(ids, pa.string()),
                     "full_path": pa.array([["d", f"n{i}"] for i in ids], pa.list_(pa.string())),
                     "vector": pa.FixedSizeListArray.from_arrays(flat, DIM)})


def _rows(content_ids, dir_ids=("5", "6"), **kw):
    return domain_rows(_contents(content_ids, **kw), _dirs(list(dir_ids)), _EMPTY, _NO_EDGES)


def _delta(gone=(), added=pa.table({"chunk_id": pa.array([], pa.string())}), dirs_gone=(), dirs=None):
    empty_dirs = pa.table({"node_id": pa.array([], pa.string())})
    return DomainDelta(frozenset(gone), frozenset(dirs_gone), frozenset(), _NO_EDGES, added,
                       dirs if dirs is not None else empty_dirs, _EMPTY, _NO_EDGES)


def test_rows_are_sorted_by_id_and_vectors_follow_them():
    rows = _rows(["3", "1", "2"])
    assert rows.contents.column("chunk_id").to_pylist() == ["1", "2", "3"]
    np.testing.assert_array_equal(rows.content_vectors, np.array([_vector(1), _vector(2), _vector(3)], np.float32))
    assert rows.dir_vectors.shape == (2, DIM)


def test_a_delta_gives_the_rows_and_vectors_a_rebuild_reads():
    old = _rows(["1", "2", "4"], dir_ids=["5", "6"])
    got = apply_delta(old, _delta(gone={"2"}, added=_contents(["3", "0"]), dirs_gone={"5"}, dirs=_dirs(["7"])))
    want = _rows(["0", "1", "3", "4"], dir_ids=["6", "7"])
    assert got.contents.equals(want.contents) and got.directories.equals(want.directories)
    np.testing.assert_array_equal(got.content_vectors, want.content_vectors)
    np.testing.assert_array_equal(got.dir_vectors, want.dir_vectors)
    np.testing.assert_array_equal(got.postings.dirs, want.postings.dirs)


def test_a_replaced_row_takes_its_new_vector():
    old = _rows(["1", "2"])
    new = _contents(["2"]).set_column(3, "vector", pa.FixedSizeListArray.from_arrays(
        pa.array(_vector(9), pa.float32()), DIM))
    got = apply_delta(old, _delta(added=new))
    np.testing.assert_array_equal(got.content_vectors[1], np.array(_vector(9), np.float32))
    assert got.contents.num_rows == 2


def test_vectors_are_none_when_a_kept_row_has_none_or_the_lengths_disagree():
    without = _rows(["1", "2"], vectors=False)
    assert without.content_vectors is None
    assert apply_delta(without, _delta(gone={"1"}, added=_contents(["3"]))).content_vectors is None
    # every row without a vector replaced: the rows all have one again
    replaced = apply_delta(without, _delta(gone={"1", "2"}, added=_contents(["3"])))
    np.testing.assert_array_equal(replaced.content_vectors, np.array([_vector(3)], np.float32))
    mixed = apply_delta(_rows(["1"]), _delta(added=_contents(["2"], dim=DIM + 1)))
    assert mixed.content_vectors is None


def test_the_previous_vectors_may_be_a_read_only_memory_map(tmp_path):
    old = _rows(["1", "2", "3"])
    path = tmp_path / "v.npy"
    np.save(path, old.content_vectors)
    mapped = np.load(path, mmap_mode="r")
    from dataclasses import replace

    got = apply_delta(replace(old, content_vectors=mapped), _delta(gone={"2"}))
    np.testing.assert_array_equal(got.content_vectors, np.array([_vector(1), _vector(3)], np.float32))
    assert got.content_vectors.flags.writeable and not isinstance(got.content_vectors, np.memmap)
