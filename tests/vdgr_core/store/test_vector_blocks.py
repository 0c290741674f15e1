"""Vectors in blocks by source document: read back as the matrix they hold, and an update
writes only the blocks whose documents changed (vdgr_core/store/vector_blocks.py)."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from vdgr_core.store.vector_blocks import (BlockAssignment, BlockedVectors, PatchedVectors, block_count, mapped_block,
                                           blocks_named, write_blocks, DOCUMENTS_PER_BLOCK)

DIM = 8


def _sources(n_docs: int, per_doc: int = 3) -> list[str]:
    # rows in "id" order: the documents' rows interleaved, as sorted content-addressed ids are
    return [f"manual/doc{(i * 7) % n_docs:03d}.md" for i in range(n_docs * per_doc)]


def _vectors(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def _blocked(index: str, domain: str, vectors, assignment: BlockAssignment) -> BlockedVectors:
    names = write_blocks(index, domain, vectors, assignment).names
    return BlockedVectors(lambda rel: os.path.join(index, *rel.split("/")), domain, names, assignment.ptr,
                          assignment.order, assignment.slot, DIM)


def test_block_count_is_a_power_of_two_of_about_one_block_per_sixteen_documents():
    assert [block_count(n) for n in (0, 1, 16, 17, 33, 1000)] == [1, 1, 1, 2, 4, 64]
    assert all(n / block_count(n) <= DOCUMENTS_PER_BLOCK for n in range(1, 3000, 37))


def test_rows_of_one_document_share_a_block_and_the_assignment_is_a_function_of_the_sources():
    sources = _sources(100)
    a = BlockAssignment.of_sources(sources)
    b = BlockAssignment.of_sources(pa.chunked_array([pa.array(sources[:50]), pa.array(sources[50:])]))
    assert a.k == 8 and np.array_equal(a.block, b.block)
    by_doc = {}
    for s, blk in zip(sources, a.block):
        assert by_doc.setdefault(s, blk) == blk
    assert len(set(a.block.tolist())) > 1
    # the block order lists every row once, ascending inside each block
    assert sorted(a.order.tolist()) == list(range(len(sources)))
    for blk in range(a.k):
        rows = a.rows(blk)
        assert np.all(a.block[rows] == blk) and np.all(np.diff(rows) > 0)
    assert np.array_equal(a.order[a.slot], np.arange(len(sources)))


def test_blocked_vectors_read_back_the_matrix(tmp_path):
    sources = _sources(60)
    a = BlockAssignment.of_sources(sources)
    m = _vectors(len(sources))
    v = _blocked(str(tmp_path), "net", m, a)
    q = _vectors(1, seed=1)[0]
    assert v.shape == m.shape
    np.testing.assert_allclose(v @ q, m @ q, rtol=1e-6)
    rows = np.array([5, 0, 179, 42, 42])
    np.testing.assert_array_equal(v[rows], m[rows])
    np.testing.assert_array_equal(v[7], m[7])
    np.testing.assert_array_equal(np.asarray(v), m)
    assert len(os.listdir(tmp_path / "vectors" / "net")) == a.k


def _patch(old: BlockedVectors, old_sources, gone_docs, added_sources, added_vectors):
    """Merge as an update does: rows of ``gone_docs`` out, the added rows in, sorted by a key
    (here: source, then the row's old number / a large one for added rows)."""
    keep = np.array([s not in gone_docs for s in old_sources])
    kept = np.flatnonzero(keep)
    keys = [(old_sources[i], i) for i in kept] + [(s, 10_000 + j) for j, s in enumerate(added_sources)]
    order = sorted(range(len(keys)), key=lambda i: keys[i])
    new_number = np.empty(len(keys), dtype=np.int64)
    new_number[order] = np.arange(len(keys))
    sources = [keys[i][0] for i in order]
    patched = PatchedVectors(old, kept, new_number[:len(kept)], added_vectors, new_number[len(kept):], len(keys))
    return patched, sources


def test_an_update_writes_only_the_blocks_of_the_documents_it_changes(tmp_path):
    index = str(tmp_path)
    old_sources = sorted(_sources(200))
    old_m = _vectors(len(old_sources))
    a = BlockAssignment.of_sources(old_sources)
    old = _blocked(index, "net", old_m, a)
    changed = {"manual/doc003.md", "manual/doc150.md"}
    added_sources = ["manual/doc003.md"] * 2 + ["manual/doc150.md"] * 4
    added = _vectors(len(added_sources), seed=2)
    patched, sources = _patch(old, old_sources, changed, added_sources, added)
    b = BlockAssignment.of_sources(sources)
    assert b.k == a.k
    reuse = patched.reusable(b)
    dirty = {int(a.block[old_sources.index(d)]) for d in changed}
    assert set(reuse) == set(range(b.k)) - dirty
    done = write_blocks(index, "net", patched, b)
    assert done.written == len(dirty) and done.reused == b.k - len(dirty)
    # the same rows written from scratch give the same block names
    want = np.asarray(patched)
    fresh = write_blocks(str(tmp_path / "rebuild"), "net", want, b)
    assert fresh.names == done.names and fresh.written == b.k
    new = BlockedVectors(lambda rel: os.path.join(index, *rel.split("/")), "net", done.names, b.ptr, b.order,
                         b.slot, DIM)
    np.testing.assert_array_equal(np.asarray(new), want)


def test_a_new_block_count_writes_every_block_again(tmp_path):
    index = str(tmp_path)
    old_sources = sorted(_sources(16))
    a = BlockAssignment.of_sources(old_sources)
    old = _blocked(index, "net", _vectors(len(old_sources)), a)
    added_sources = [f"manual/new{i:02d}.md" for i in range(10)]
    patched, sources = _patch(old, old_sources, set(), added_sources, _vectors(10, seed=3))
    b = BlockAssignment.of_sources(sources)
    assert (a.k, b.k) == (1, 2) and patched.reusable(b) == {}
    assert write_blocks(index, "net", patched, b).reused == 0


def test_blocks_named_lists_the_files_of_every_layout():
    metas = [{"domain": "net hw", "vector_blocks": {"content": {"dim": 4, "blocks": ["aa", "", "bb"]},
                                                    "dir": {"dim": 4, "blocks": ["cc"]}}},
             {"domain": "hr"}]
    assert blocks_named(metas) == {"vectors/net_hw/aa.npy", "vectors/net_hw/bb.npy", "vectors/net_hw/cc.npy"}


def test_mapped_blocks_hold_no_file_descriptor(tmp_path):
    """A process that has read thousands of blocks must not hold a descriptor for each (Python's
    mmap keeps one: at 1M chunks a query process hit the open-files limit)."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    m = _vectors(3)
    paths = []
    for i in range(300):
        path = tmp_path / f"b{i}.npy"
        np.save(path, m + i)
        paths.append(str(path))
    before = len(os.listdir("/proc/self/fd"))
    blocks = [mapped_block(p, 3, DIM) for p in paths]
    assert len(os.listdir("/proc/self/fd")) - before < 10
    assert all(np.array_equal(b, m + i) for i, b in enumerate(blocks))
    assert not blocks[0].flags.writeable
    try:
        mapped_block(paths[1], 4, DIM)            # the layout and the file disagree
    except OSError:
        pass
    else:
        raise AssertionError("a block of the wrong shape was accepted")
