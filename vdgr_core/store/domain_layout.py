"""The query layout of one domain: memory-mapped arrays and a document store, written at commit.

The query side never loads a table. Everything it needs besides the LanceDB vector indexes
(searches across many domains) and the tantivy shards sits in one folder per domain,
``layout/<domain>/<digest>/``, named by the manifest (``layouts``) and opened in O(1): ``.npy``
arrays with ``np.load(mmap_mode="r")`` and Arrow IPC files through ``pyarrow.memory_map``. Pages
are read when a query touches them.

Local numbering: contents, directories and entities are numbered by their sorted ids
(``chunk_id``, ``node_id``, ``entity_id``); sections (the evidence unit: one parent directory
node of one source file) by their sorted key ``source \\x00 parent_id``.

=============================  =============================================================
file                           what
=============================  =============================================================
``content_ids.npy``            ``S32`` chunk ids, sorted: local content ``i``
``content_section.npy``        ``int32`` section of each content
``content_dir.npy``            ``int32`` directory of each content's parent node (``-1``: none)
``content_acl.npy``            ``int32`` ACL class (``meta.acl_classes``), likewise
``content_version.npy``,       ``int32`` codes into ``meta.versions`` / ``meta.collections``
``content_collection.npy``
``content_position.npy``       ``int64`` position of each content in its document
``content_block_ptr/_rows/     where each content's embedding lives: the vectors are in
_slot.npy``                    blocks shared between layout versions,
                               ``vectors/<domain>/<digest>.npy``, grouped by source document
                               (vdgr_core/store/vector_blocks.py; absent when a row has none):
                               a scoped dense search scans its domains' rows exactly
``section_ptr.npy``,           CSR: the contents of each section in reading order (position,
``section_rows.npy``           then id)
``section_doc.npy``            ``int32`` source file of each section (rank in sorted sources)
``section_dir.npy``            ``int32`` directory of the section's node (``-1``: none)
``dir_ids.npy``                ``S32`` node ids, sorted: local directory ``j``
``dir_parent.npy``             ``int32`` parent directory (``-1``: a root)
``dir_block_ptr/_rows/_slot``  each directory's embedding, likewise
``dir_acl.npy``, ...           ``int32`` ACL class, version and collection codes of directories
``dir_children_ptr/_idx.npy``  CSR: child directories (sorted)
``dir_contents_ptr/_idx.npy``  CSR: contents whose parent node is the directory (sorted)
``dir_below_ptr/_idx.npy``     CSR: the ACL classes of every content at or below the directory
                               (what "a reader may see something below it" is decided on)
``label_keys.npy``             ``uint64`` sorted hashes of the label stems (TOC route)
``label_ptr/_dirs/_tf.npy``    CSC: for each stem, the directories whose label holds it, and
                               how often
``label_len.npy``              ``float32`` stems per directory label (``0``: unlabelled)
``entity_ids.npy``             ``S32`` entity ids, sorted: local entity ``k``
``graph_ptr/_idx/_w.npy``      CSR over ``nc + ne`` nodes (contents, then entities): every
                               ``has_entity`` (mentions) and ``cooccurs`` (sentences) edge in
                               both directions, equal pairs summed, no self loops, weight 0
                               counted as 1
``synonym_ptr/_idx/_w.npy``    CSR over entities: near-identical entity vectors (cosine >=
                               ``meta.synonym_min``), at most 5 per entity, symmetric
``contents.arrow``             text, title, source, path, parent_id, page, flags, version,
                               collection of each local content (batches of 65,536 rows)
``directories.arrow``          title, full_path, summary, kind, level, parent_id of each directory
``entities.arrow``             name, norm of each entity
``meta.json``                  format, domain, counts, ``acl_classes``, ``versions``,
                               ``collections``, ``visible`` (the (acl class, collection,
                               version) combinations present among contents), ``synonym_min``,
                               ``vector_blocks`` (per kind: ``dim`` and each block's name)
=============================  =============================================================

Index arrays of a CSR are ``int32`` (a domain holds fewer than 2**31 edges), so scipy wraps
the memory maps without copying them. The folder's digest covers every file, and through
``meta.json`` the names of its vector blocks (each named by its bytes' digest): equal rows give
an equal folder name, whether a build or an update wrote it (an update rebuilds a changed
domain's rows from its previous layout plus the delta, vdgr_core/store/layout_rows.py, and
writes only the vector blocks of the documents it changed).

Format 2 layouts held ``content_vectors.npy`` and ``dir_vectors.npy`` whole; they are still read
(:meth:`DomainLayout.vectors`), and an update writes them again in the current format.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Mapping, Optional

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
from scipy import sparse

from vdgr_core.store.location import IndexLocation, safe_name
from vdgr_core.store.pending import PendingPublish
from vdgr_core.store.vector_blocks import BlockedVectors

FORMAT = 3                   # 2: content and directory vectors; 3: in shared blocks
BATCH_ROWS = 65_536          # rows per record batch of the document store files
STORE_FILES = ("contents.arrow", "directories.arrow", "entities.arrow")


@dataclass(frozen=True)
class LayoutRef:
    """What the manifest records of a domain's layout: its folder and its counts."""

    folder: str
    contents: int
    sections: int
    directories: int
    entities: int
    documents: int

    def to_json(self) -> dict:
        return {"folder": self.folder, "contents": self.contents, "sections": self.sections,
                "directories": self.directories, "entities": self.entities, "documents": self.documents}

    @classmethod
    def from_json(cls, d: Mapping) -> "LayoutRef":
        return cls(str(d["folder"]), int(d["contents"]), int(d["sections"]), int(d["directories"]),
                   int(d["entities"]), int(d["documents"]))


def _write_ipc(f, table: pa.Table) -> None:
    with ipc.new_file(f, table.schema) as w:
        for batch in table.combine_chunks().to_batches(max_chunksize=BATCH_ROWS):
            w.write_batch(batch)


def _hash_file(h, name: str, path: str, block: int = 1 << 23) -> None:
    """Add a written file to the folder's digest: its name, its length, then its bytes (read
    back in blocks, so no file is held in memory whole: a vectors file is ~50 MB a domain at
    1M chunks)."""
    h.update(name.encode("utf-8") + os.path.getsize(path).to_bytes(8, "little"))
    with open(path, "rb") as f:
        while chunk := f.read(block):
            h.update(chunk)


def publish_layout(index_root: str, domain: str, arrays: Mapping[str, np.ndarray],
                   stores: Mapping[str, pa.Table], meta: dict, pending: Optional[PendingPublish] = None) -> LayoutRef:
    """Write one domain's layout folder whole (named by the digest of its files) and return its
    reference. Each file is written to a temporary folder as it is serialized, then read back
    into the digest (no file's bytes are held in memory); a folder already published with the
    same content is kept. A local folder is made durable and renamed into place here or, with
    ``pending``, when it publishes (with the other domains' files)."""
    meta = {**meta, "format": FORMAT, "domain": domain}
    counts = meta["counts"]
    loc = IndexLocation(index_root)
    parent = None if loc.remote else os.path.join(loc.local_folder("layout"), safe_name(domain))
    if parent is not None:
        os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".building-" if parent else "vdgr-layout-", dir=parent)
    try:
        h = hashlib.sha256(f"layout {FORMAT}\x1f{domain}".encode("utf-8"))
        writers = {**{name + ".npy": (lambda f, a=arrays[name]: np.save(f, np.ascontiguousarray(a),
                                                                           allow_pickle=False))
                      for name in arrays},
                   **{name + ".arrow": (lambda f, t=stores[name]: _write_ipc(f, t)) for name in stores},
                   "meta.json": lambda f: f.write(json.dumps(meta, sort_keys=True).encode("utf-8"))}
        for name in sorted(writers):
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                writers[name](f)
            _hash_file(h, name, path)
        rel = f"layout/{safe_name(domain)}/{h.hexdigest()[:24]}"
        ref = LayoutRef(rel, counts["contents"], counts["sections"], counts["directories"], counts["entities"],
                        counts["documents"])
        if loc.exists(rel):
            shutil.rmtree(tmp, ignore_errors=True)
            return ref
        if parent is None:
            loc.publish_folder(tmp, rel)
            return ref
        # durable before it is renamed into place (with many files, one syncfs)
        with PendingPublish() if pending is None else contextlib.nullcontext(pending) as later:
            later.add_folder(tmp, [os.path.join(tmp, name) for name in writers],
                             functools.partial(_publish_unless_there, loc, tmp, rel))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return ref


def _publish_unless_there(loc: IndexLocation, tmp: str, rel: str) -> None:
    """Rename the finished folder ``tmp`` to ``rel``; another run's folder there (the same
    content: folders are named by it) is kept."""
    if loc.exists(rel):
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        loc.publish_folder(tmp, rel)


def layout_format(folder: str) -> int:
    """The format a layout folder was written in (``meta.json``; 0 when unreadable)."""
    try:
        with open(os.path.join(folder, "meta.json"), encoding="utf-8") as f:
            return int(json.load(f).get("format", 0))
    except (OSError, ValueError):
        return 0


class DomainLayout:
    """One domain's layout, memory-mapped (every array and store opens on first use).

    Parameters
    ----------
    folder : str
        A local layout folder (``IndexReader.layout_folder``).
    block_file : callable, optional
        The local path of a vector block from its path under the index root
        (``IndexReader.block_file``: a remote index's blocks are fetched to a local cache); by
        default the index holding ``folder``.
    """

    def __init__(self, folder: str, block_file: Optional[Callable[[str], str]] = None):
        self.folder = folder
        if block_file is None:
            root = os.path.normpath(os.path.join(folder, os.pardir, os.pardir, os.pardir))
            block_file = lambda rel: os.path.join(root, *rel.split("/"))  # noqa: E731
        self._block_file = block_file
        self._vectors: dict[str, object] = {}
        with open(os.path.join(folder, "meta.json"), encoding="utf-8") as f:
            self.meta = json.load(f)
        self.domain: str = self.meta["domain"]
        counts = self.meta["counts"]
        self.nc, self.ns = int(counts["contents"]), int(counts["sections"])
        self.nd, self.ne = int(counts["directories"]), int(counts["entities"])
        self.acl_classes: list[tuple[str, ...]] = [tuple(c) for c in self.meta["acl_classes"]]
        self.versions: list[str] = list(self.meta["versions"])
        self.collections: list[str] = list(self.meta["collections"])
        self._arrays: dict[str, np.ndarray] = {}
        self._stores: dict[str, pa.Table] = {}
        self._lock = threading.Lock()

    def array(self, name: str) -> np.ndarray:
        """The memory-mapped array ``name`` (without ``.npy``)."""
        a = self._arrays.get(name)
        if a is None:
            # a plain ndarray view of the map (np.memmap's subclass hooks cost on every slice)
            a = np.asarray(np.load(os.path.join(self.folder, name + ".npy"), mmap_mode="r", allow_pickle=False))
            with self._lock:
                self._arrays[name] = a
        return a

    def store(self, name: str) -> pa.Table:
        """The document store ``name`` (contents, directories, entities) over a memory map."""
        t = self._stores.get(name)
        if t is None:
            source = pa.memory_map(os.path.join(self.folder, name + ".arrow"), "r")
            t = ipc.open_file(source).read_all()
            with self._lock:
                self._stores[name] = t
        return t

    def vectors(self, kind: str):
        """The embeddings of ``kind`` (``content`` or ``dir``) in local order: a
        :class:`~vdgr_core.store.vector_blocks.BlockedVectors` over the layout's blocks (a
        format 2 layout: its memory-mapped matrix); ``None`` when the layout holds none (the
        table is searched instead)."""
        got = self._vectors.get(kind)
        if got is not None:
            return got
        spec = (self.meta.get("vector_blocks") or {}).get(kind)
        if spec is not None:
            got = BlockedVectors(self._block_file, self.domain, spec["blocks"], self.array(f"{kind}_block_ptr"),
                                 self.array(f"{kind}_block_rows"), self.array(f"{kind}_block_slot"), spec["dim"])
        elif os.path.exists(os.path.join(self.folder, f"{kind}_vectors.npy")):
            got = self.array(f"{kind}_vectors")
        else:
            return None
        with self._lock:
            self._vectors[kind] = got
        return got

    def csr(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """(pointers, indices) of the CSR ``prefix`` (``dir_children``, ``dir_contents``, ...)."""
        return self.array(prefix + "_ptr"), self.array(prefix + "_idx")

    @cached_property
    def graph(self) -> sparse.csr_matrix:
        """The symmetric content + entity adjacency (memory-mapped, not copied)."""
        n = self.nc + self.ne
        return sparse.csr_matrix((self.array("graph_w"), self.array("graph_idx"), self.array("graph_ptr")),
                                 shape=(n, n), copy=False)

    @cached_property
    def synonyms(self) -> sparse.csr_matrix:
        """Synonym edges between entities (local entity numbers), weighted by cosine."""
        return sparse.csr_matrix((self.array("synonym_w"), self.array("synonym_idx"), self.array("synonym_ptr")),
                                 shape=(self.ne, self.ne), copy=False)

    @property
    def synonym_min(self) -> float:
        return float(self.meta.get("synonym_min", 2.0))

    def local_ids(self, kind: str, ids) -> tuple[np.ndarray, np.ndarray]:
        """(local numbers, found) of ``ids`` (str or bytes) among ``kind`` ids (content, dir, entity)."""
        table = self.array(f"{kind}_ids")
        keys = np.asarray([i.encode("ascii") if isinstance(i, str) else i for i in ids], dtype="S32")
        if len(table) == 0 or len(keys) == 0:
            return np.zeros(len(keys), dtype=np.int64), np.zeros(len(keys), dtype=bool)
        pos = np.minimum(np.searchsorted(table, keys), len(table) - 1)
        return pos.astype(np.int64), table[pos] == keys


__all__ = ["DomainLayout", "LayoutRef", "layout_format", "publish_layout", "FORMAT", "STORE_FILES", "BATCH_ROWS"]
