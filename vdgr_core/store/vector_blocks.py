"""A domain's embeddings, stored in blocks that layout versions share.

A layout (vdgr_core/store/domain_layout.py) does not hold its rows' vectors in one file. Its
contents (and its directories) are grouped into blocks by source document: a row's block is a
hash of its ``source`` modulo the block count, a power of two of about one block per
:data:`DOCUMENTS_PER_BLOCK` documents (:func:`block_count`). Each block is one file,
``vectors/<domain>/<digest>.npy``: the vectors of its rows in local order, named by the digest
of its bytes. The layout names its blocks in ``meta.json`` (``vector_blocks``) and holds three
arrays per kind: ``<kind>_block_ptr`` (where each block starts in block order),
``<kind>_block_rows`` (the rows in block order) and ``<kind>_block_slot`` (each row's place in
block order).

Why: an update changes whole documents. The blocks of unchanged documents keep their rows and
their bytes, so an update writes only the blocks of the documents it adds, changes or removes,
and reads nothing else (:class:`PatchedVectors.reusable`). Before, every changed domain's
vectors were read from the previous layout and written again: at 1M chunks, with 1% of the
documents changed across all 33 domains, that was ~2.6 GB read and written per update.

The assignment is a function of the rows alone (sources, sorted ids), and a block's name a
function of its bytes, so a rebuild and an update of equal rows write equal blocks and equal
layout folders (the property tests/pipelines/test_update_property.py checks).
"""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import os
import tempfile
import weakref
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from vdgr_core.store.location import IndexLocation, libc, safe_name
from vdgr_core.store.pending import PendingPublish

DOCUMENTS_PER_BLOCK = 16     # documents per block, on average (a block of 16 manual pages: ~0.5 MB)
MAX_BLOCKS = 4096            # blocks per kind of a domain, at most


def block_count(n_documents: int) -> int:
    """The number of blocks for ``n_documents`` distinct sources: the least power of two
    giving at most :data:`DOCUMENTS_PER_BLOCK` documents a block (at most :data:`MAX_BLOCKS`)."""
    k = 1
    while k * DOCUMENTS_PER_BLOCK < n_documents and k < MAX_BLOCKS:
        k *= 2
    return k


def _source_hash(source: str) -> int:
    return int.from_bytes(hashlib.blake2b(source.encode("utf-8"), digest_size=8).digest(), "little")


@dataclass(frozen=True)
class BlockAssignment:
    """Which block each row's vector lives in, and where.

    ``block`` is each row's block; ``order`` the rows in block order (blocks ascending, rows
    ascending inside a block); ``ptr[b]:ptr[b + 1]`` block ``b``'s part of ``order``; ``slot``
    each row's place in ``order``."""

    k: int
    block: np.ndarray      # int32, one per row
    order: np.ndarray      # int32
    ptr: np.ndarray        # int64, k + 1
    slot: np.ndarray       # int32, one per row

    @classmethod
    def of_sources(cls, sources: Union[pa.Array, pa.ChunkedArray, Sequence[str]]) -> "BlockAssignment":
        """The assignment of rows whose source documents are ``sources`` (in local order)."""
        arr = sources if isinstance(sources, (pa.Array, pa.ChunkedArray)) else pa.array(list(sources), pa.string())
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        arr = arr.fill_null("") if arr.null_count else arr
        encoded = arr.dictionary_encode()
        names = encoded.dictionary.to_pylist()
        k = block_count(len(names))
        of_name = np.array([_source_hash(s) & (k - 1) for s in names], dtype=np.int32)
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        return cls.of_blocks(of_name[codes] if len(codes) else np.zeros(0, np.int32), k)

    @classmethod
    def of_blocks(cls, block: np.ndarray, k: int) -> "BlockAssignment":
        block = np.asarray(block, dtype=np.int32)
        order = np.argsort(block, kind="stable").astype(np.int32)
        ptr = np.zeros(k + 1, dtype=np.int64)
        ptr[1:] = np.cumsum(np.bincount(block, minlength=k))
        slot = np.empty(len(block), dtype=np.int32)
        slot[order] = np.arange(len(block), dtype=np.int32)
        return cls(k, block, order, ptr, slot)

    def rows(self, b: int) -> np.ndarray:
        """The rows of block ``b``, ascending."""
        return self.order[self.ptr[b]:self.ptr[b + 1]]

    def arrays(self, kind: str) -> dict[str, np.ndarray]:
        """The layout arrays that record this assignment."""
        return {f"{kind}_block_ptr": self.ptr, f"{kind}_block_rows": self.order, f"{kind}_block_slot": self.slot}


def block_rel(domain: str, name: str) -> str:
    """A block file's path under the index root."""
    return f"vectors/{safe_name(domain)}/{name}.npy"


def _block_bytes(matrix: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(matrix, dtype=np.float32), allow_pickle=False)
    return buf.getvalue()


# ---------------------------------------------------------------- memory-mapping blocks
# Python's mmap (and so np.load(mmap_mode=...)) keeps a duplicate of the file descriptor for as
# long as the map lives: at 1M chunks a process that had read every block held ~17,000 of them
# and hit the open-files limit (20,000 here). A block is mapped through libc instead and the
# descriptor closed at once; the map goes when the last array viewing it does. A layout's
# BlockedVectors keeps the blocks it mapped (a domain's 256 per kind at 1M; vm.max_map_count is
# 65,530 by default).
@lru_cache(maxsize=1)
def _mmap_functions():
    """libc's ``mmap`` and ``munmap`` with their signatures; None where they are not available."""
    lib = libc()
    if lib is None or not hasattr(lib, "mmap") or not hasattr(lib, "munmap"):
        return None
    mmap, munmap = lib.mmap, lib.munmap
    mmap.restype = ctypes.c_void_p
    mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return mmap, munmap


def _map_file(path: str) -> Optional[object]:
    """The bytes of ``path`` mapped read-only, as a ctypes array (unmapped when collected);
    None where libc's mmap is not available."""
    functions = _mmap_functions()
    if functions is None:
        return None
    mmap, munmap = functions
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise OSError(f"{path} is empty")
        addr = mmap(None, size, 1, 1, fd, 0)          # PROT_READ, MAP_SHARED
    finally:
        os.close(fd)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        err = ctypes.get_errno()
        raise OSError(err, f"mmap of {path}: {os.strerror(err)}")
    buf = (ctypes.c_char * size).from_address(addr)
    weakref.finalize(buf, munmap, addr, size)
    return buf


def mapped_block(path: str, rows: int, dim: int) -> np.ndarray:
    """The ``rows x dim`` float32 matrix of the block file ``path``, memory-mapped read-only.

    Raises
    ------
    OSError
        When the file is not a ``.npy`` file or holds another shape than its layout says."""
    buf = _map_file(path)
    if buf is None:
        got = np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))
    else:
        raw = np.frombuffer(buf, dtype=np.uint8)
        if bytes(raw[:6]) != b"\x93NUMPY":
            raise OSError(f"{path} is not a .npy file")
        header = 10 + int.from_bytes(bytes(raw[8:10]), "little") if raw[6] == 1 else \
            12 + int.from_bytes(bytes(raw[8:12]), "little")
        data = raw[header:]
        got = data[:len(data) - len(data) % (4 * dim)].view("<f4").reshape(-1, dim)
        got.flags.writeable = False
    if got.shape != (rows, dim):
        raise OSError(f"{path} holds {got.shape}, its layout says {(rows, dim)}")
    return got


class _ReadByTake:
    """``vectors[rows]`` and ``np.asarray(vectors)`` of a row-vector kind that has ``take``."""

    def __getitem__(self, rows):
        if np.isscalar(rows):
            return self.take([int(rows)])[0]
        return self.take(rows)

    def __array__(self, dtype=None, copy=None):
        out = self.take(np.arange(len(self)))
        return out if dtype is None else out.astype(dtype)


class BlockedVectors(_ReadByTake):
    """A layout's vectors of one kind, read from its blocks (memory-mapped on first use).

    Behaves as the ``n x dim`` matrix in local order for what the query side asks of it:
    ``vectors @ q`` (one product per block, put back in local order) and ``vectors[rows]``
    (the rows read from their blocks)."""

    dtype = np.dtype(np.float32)
    ndim = 2

    def __init__(self, path_of: Callable[[str], str], domain: str, names: Sequence[str], ptr: np.ndarray,
                 order: np.ndarray, slot: np.ndarray, dim: int):
        self._path_of, self._domain = path_of, domain
        self.names = list(names)
        self.k = len(self.names)
        self.ptr, self.order, self.slot = ptr, order, slot
        self.shape = (len(slot), int(dim))
        # the blocks once mapped (a scan touches every block)
        self._arrays: list[Optional[np.ndarray]] = [None] * self.k

    def __len__(self) -> int:
        return self.shape[0]

    def block(self, b: int) -> np.ndarray:
        """Block ``b``'s vectors (its rows in ascending order), memory-mapped (read-only)."""
        got = self._arrays[b]
        if got is None:
            got = self._arrays[b] = mapped_block(self._path_of(block_rel(self._domain, self.names[b])),
                                                 int(self.ptr[b + 1] - self.ptr[b]), self.shape[1])
        return got

    def blocks_of(self, rows: np.ndarray) -> np.ndarray:
        """The block of each row."""
        return (np.searchsorted(self.ptr, self.slot[rows], side="right") - 1).astype(np.int64)

    def __matmul__(self, q: np.ndarray) -> np.ndarray:
        q = np.asarray(q)
        out = np.empty((self.shape[0],) + q.shape[1:], dtype=np.result_type(self.dtype, q.dtype))
        for b in range(self.k):
            lo, hi = int(self.ptr[b]), int(self.ptr[b + 1])
            if hi > lo:
                out[lo:hi] = self.block(b) @ q
        return out[self.slot]

    def take(self, rows) -> np.ndarray:
        """The vectors of ``rows`` (local numbers), in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((len(rows), self.shape[1]), dtype=np.float32)
        if not len(rows):
            return out
        slots = self.slot[rows].astype(np.int64)
        blocks = self.blocks_of(rows)
        for b in np.unique(blocks):
            sel = blocks == b
            out[sel] = self.block(int(b))[slots[sel] - self.ptr[b]]
        return out



@dataclass(frozen=True)
class PatchedVectors(_ReadByTake):
    """The vectors of an update's merged rows: the previous layout's kept rows (read from its
    blocks only when a block must be written again) and the added rows' vectors."""

    old: BlockedVectors
    kept: np.ndarray          # old rows kept, ascending
    kept_to: np.ndarray       # their new numbers
    added: np.ndarray         # the added rows' vectors
    added_to: np.ndarray      # their new numbers
    n: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.old.shape[1]

    def __len__(self) -> int:
        return self.n

    @cached_property
    def _sources(self) -> tuple[np.ndarray, np.ndarray]:
        """For each merged row its old row and its added row (-1: not from there)."""
        from_old = np.full(self.n, -1, dtype=np.int64)
        from_old[self.kept_to] = self.kept
        from_added = np.full(self.n, -1, dtype=np.int64)
        from_added[self.added_to] = np.arange(len(self.added_to))
        return from_old, from_added

    def take(self, rows) -> np.ndarray:
        """The vectors of merged ``rows``, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        from_old, from_added = self._sources
        out = np.empty((len(rows), self.shape[1]), dtype=np.float32)
        o, a = from_old[rows], from_added[rows]
        if (o >= 0).any():
            out[o >= 0] = self.old.take(o[o >= 0])
        if (a >= 0).any():
            out[a >= 0] = self.added[a[a >= 0]]
        return out

    def reusable(self, assignment: BlockAssignment) -> dict[int, str]:
        """The blocks of ``assignment`` that the previous layout already wrote, by name: with
        the same block count, a block that lost no row and gained none holds the same rows
        (a kept row keeps its source, so its block) in the same order."""
        if assignment.k != self.old.k:
            return {}
        removed = np.ones(self.old.shape[0], dtype=bool)
        removed[self.kept] = False
        dirty = set(self.old.blocks_of(np.flatnonzero(removed)).tolist())
        dirty |= set(assignment.block[self.added_to].tolist())
        return {b: name for b, name in enumerate(self.old.names) if name and b not in dirty}


RowVectors = Union[np.ndarray, BlockedVectors, PatchedVectors]


def take_rows(vectors: RowVectors, rows: np.ndarray) -> np.ndarray:
    """The vectors of ``rows`` from any of the row-vector kinds, as a ``float32`` matrix."""
    if isinstance(vectors, np.ndarray):
        return np.asarray(vectors[rows], dtype=np.float32)
    return vectors.take(rows)


@dataclass(frozen=True)
class BlocksWritten:
    """What :func:`write_blocks` did: the layout's block names, and how many it wrote."""

    names: list[str]          # one per block ("" for an empty block)
    written: int              # files written by this call
    reused: int               # blocks named after the previous layout's, not read or written


#: blocks sent to an object store together, several at once (``IndexLocation.write_missing``)
UPLOAD_GROUP = 32


def write_blocks(index_root: str, domain: str, vectors: RowVectors, assignment: BlockAssignment,
                 pending: Optional[PendingPublish] = None) -> BlocksWritten:
    """Write the blocks of ``vectors`` under ``assignment`` that do not exist yet.

    A block the previous layout already holds (``PatchedVectors.reusable``) is named, not read.
    Local files are written under temporary names, made durable together (one ``syncfs``:
    :func:`~vdgr_core.store.location.make_durable`) and renamed into place, here or, with
    ``pending``, when it publishes (with the other domains' files); an object store shows a
    file once its upload completes. Blocks are published before the layout that names them, so
    a crash leaves at most unnamed blocks and temporary files (``vdgr gc`` removes them)."""
    reuse = vectors.reusable(assignment) if isinstance(vectors, PatchedVectors) else {}
    loc = IndexLocation(index_root)
    folder = None if loc.remote else os.path.join(loc.local_folder("vectors"), safe_name(domain))
    if folder is not None:
        os.makedirs(folder, exist_ok=True)
    names, temps, placed, written = [], {}, set(), 0            # temps: temporary file -> final path
    uploads: dict[str, bytes] = {}                               # object store: rel -> bytes, sent in groups
    try:
        for b in range(assignment.k):
            rows = assignment.rows(b)
            if not len(rows):
                names.append("")
                continue
            if b in reuse:
                names.append(reuse[b])
                continue
            data = _block_bytes(take_rows(vectors, rows))
            name = hashlib.sha256(data).hexdigest()[:24]
            names.append(name)
            rel = block_rel(domain, name)
            if folder is None:
                uploads[rel] = data
                if len(uploads) >= UPLOAD_GROUP:
                    written += loc.write_missing(uploads)
                    uploads = {}
                continue
            final = os.path.join(folder, f"{name}.npy")
            if final in placed or os.path.exists(final):
                continue
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            temps[tmp] = final
            placed.add(final)
        if uploads:
            written += loc.write_missing(uploads)
        if folder is not None and temps:
            written = len(temps)
            with PendingPublish() if pending is None else contextlib.nullcontext(pending) as later:
                # durable under temporary names first: a block in place is always whole, so a
                # later run may name it without reading it
                for tmp, final in temps.items():
                    later.add_file(tmp, final)
                temps = {}
    finally:
        for tmp in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return BlocksWritten(names, written, len(reuse))


def blocks_named(metas: Iterable[Mapping]) -> set[str]:
    """The block files (paths under the index root) the layouts with these ``meta.json`` name."""
    out = set()
    for meta in metas:
        for spec in (meta.get("vector_blocks") or {}).values():
            out.update(block_rel(meta["domain"], n) for n in spec["blocks"] if n)
    return out


__all__ = ["BlockAssignment", "BlockedVectors", "BlocksWritten", "PatchedVectors", "RowVectors", "block_count",
           "block_rel", "blocks_named", "take_rows", "write_blocks", "mapped_block", "DOCUMENTS_PER_BLOCK"]
