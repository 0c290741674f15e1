"""``IndexView``: the query side's read-only view of one index build, over on-disk layouts.

Opening a view reads the manifest only: every domain's layout (vdgr_core/store/domain_layout.py)
is memory-mapped on first use, and its pages are read when a query touches them, so opening is
O(1) in corpus size and a query's memory is what it touches.

Rows are numbered globally, domain after domain in sorted domain order, each domain's local
numbering (sorted ids) shifted by the rows of the domains before it: content, section, dir
(directory) and entity rows. Row order is the tie-break of every ranking (ids within a domain).
The column accessors (``view.contents.text[row]``, ``view.sections.rows[s]``, ...) read the
layout's arrays and document store; nothing is copied into memory beyond what is asked.
"""
from __future__ import annotations

import bisect
import threading
from typing import Iterator, Optional, Sequence

import numpy as np

from schemas.errors import IndexError_
from vdgr_core.ids import entity_id
from vdgr_core.query.scope import QueryScope, RowMask
from vdgr_core.store.domain_layout import DomainLayout

KINDS = ("content", "section", "dir", "entity", "document")
_COUNT_FIELD = {"content": "contents", "section": "sections", "dir": "directories", "entity": "entities",
                "document": "documents"}
_MASKS = 128          # row masks kept per kind (one per distinct scope)


def csr_gather(ptr: np.ndarray, idx: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The CSR entries of ``rows``: (values, position in ``rows`` of each value), row by row."""
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) == 0:
        return np.zeros(0, dtype=np.asarray(idx).dtype), np.zeros(0, dtype=np.int64)
    starts = np.asarray(ptr[rows], dtype=np.int64)
    lens = np.asarray(ptr[rows + 1], dtype=np.int64) - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.asarray(idx).dtype), np.zeros(0, dtype=np.int64)
    owner = np.repeat(np.arange(len(rows)), lens)
    offsets = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens) + starts[owner]
    return np.asarray(idx[offsets]), owner


class _Column:
    """``column[row]`` for one document-store column of one kind of row."""

    def __init__(self, view: "IndexView", kind: str, store: str, name: str, convert=None):
        self._view, self._kind, self._store, self._name, self._convert = view, kind, store, name, convert

    def __getitem__(self, row: int):
        d, local = self._view.locate(self._kind, int(row))
        value = self._view.store_column(d, self._store, self._name)[int(local)].as_py()
        return self._convert(value) if self._convert else value

    def take(self, rows) -> list:
        """The values of many rows (in the order given)."""
        rows = np.asarray(rows, dtype=np.int64)
        out: list = [None] * len(rows)
        for d, where, local in self._view.split(self._kind, rows):
            values = self._view.store_column(d, self._store, self._name).take(local).to_pylist()
            for w, v in zip(where, values):
                out[int(w)] = self._convert(v) if self._convert else v
        return out


class _Ids:
    """``ids[row]``: the row's id (``chunk_id``, ``node_id`` or ``entity_id``)."""

    def __init__(self, view: "IndexView", kind: str):
        self._view, self._kind = view, kind

    def __getitem__(self, row: int) -> str:
        d, local = self._view.locate(self._kind, int(row))
        return bytes(self._view.layout(d).array(f"{self._kind}_ids")[local]).decode("ascii")


class _Domain:
    def __init__(self, view: "IndexView", kind: str):
        self._view, self._kind = view, kind

    def __getitem__(self, row: int) -> str:
        return self._view.locate(self._kind, int(row))[0]


class _Identity:
    """``id_rank[row] == row``: rows are numbered in the tie-break order."""

    def __getitem__(self, row):
        return row


def _tuple(v):
    return tuple(v or ())


class _Rows:
    """Shared by the row kinds: length, masks, ids, domains."""

    kind = ""

    def __init__(self, view: "IndexView"):
        self._view = view
        self.ids = _Ids(view, self.kind)
        self.domain = _Domain(view, self.kind)
        self.id_rank = _Identity()
        self._masks: dict[tuple, RowMask] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return int(self._view.base(self.kind)[-1])

    def mask(self, scope: QueryScope) -> RowMask:
        """What ``scope`` lets the caller see of these rows (cached per scope)."""
        key = scope.key()
        with self._lock:
            m = self._masks.get(key)
            if m is None:
                if len(self._masks) >= _MASKS:
                    self._masks.pop(next(iter(self._masks)))
                m = self._masks[key] = RowMask(self._view, self.kind, scope)
        return m

    def visible(self, groups) -> RowMask:
        """The rows ``groups`` may read, in any domain, version and collection."""
        from vdgr_core.store.filters import SearchScope

        return self.mask(QueryScope(SearchScope(groups=tuple(groups))))

    def row(self, domain: str, key: str) -> Optional[int]:
        """The global row of id ``key`` in ``domain`` (None when absent)."""
        rows = self.rows_of(domain, [key])
        return None if rows[0] < 0 else int(rows[0])

    def rows_of(self, domain: str, keys: Sequence) -> np.ndarray:
        """Global rows of ids ``keys`` in ``domain`` (``-1`` where absent)."""
        if domain not in self._view.code:
            return np.full(len(keys), -1, dtype=np.int64)
        local, found = self._view.layout(domain).local_ids(self.kind, keys)
        out = local + int(self._view.base(self.kind)[self._view.code[domain]])
        out[~found] = -1
        return out


class ContentColumns(_Rows):
    """Content nodes (chunks)."""

    kind = "content"

    def __init__(self, view):
        super().__init__(view)
        col = lambda name, conv=None: _Column(view, "content", "contents", name, conv)  # noqa: E731
        self.text, self.title, self.source = col("text"), col("title"), col("source")
        self.path, self.parent_id, self.page = col("path", _tuple), col("parent_id"), col("page")
        self.flags, self.version, self.collection = col("flags", _tuple), col("version"), col("collection")

    def dir_of(self, row: int) -> Optional[int]:
        """The directory row of the chunk's parent node (None when it has none)."""
        d, local = self._view.locate("content", int(row))
        j = int(self._view.layout(d).array("content_dir")[local])
        return None if j < 0 else self._view.to_global("dir", d, j)


class SectionIndex:
    """Sections (the evidence unit): one directory node of one source file.

    ``of_row[r]`` is the section of content row ``r``; ``rows[s]`` its content rows in reading
    order; ``doc[s]`` the document (source file) number; ``id_rank[s]`` a stable tie-break.
    """

    def __init__(self, view: "IndexView"):
        self._view = view
        self.of_row = _SectionOfRow(view)
        self.rows = _SectionRows(view)
        self.doc = _SectionDoc(view)
        self.id_rank = _Identity()

    def __len__(self) -> int:
        return int(self._view.base("section")[-1])

    def node(self, section: int) -> Optional[int]:
        """The directory row of a section's node (None when its chunks have no parent node)."""
        d, local = self._view.locate("section", int(section))
        j = int(self._view.layout(d).array("section_dir")[local])
        return None if j < 0 else self._view.to_global("dir", d, j)


class _SectionOfRow:
    def __init__(self, view):
        self._view = view

    def __getitem__(self, row):
        d, local = self._view.locate("content", int(row))
        return self._view.to_global("section", d, int(self._view.layout(d).array("content_section")[local]))

    def take(self, rows) -> np.ndarray:
        """The sections of many content rows."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.int64)
        for d, where, local in self._view.split("content", rows):
            out[where] = np.asarray(self._view.layout(d).array("content_section")[local]) + \
                self._view.to_global("section", d, 0)
        return out


class _SectionRows:
    def __init__(self, view):
        self._view = view

    def __getitem__(self, section) -> np.ndarray:
        d, local = self._view.locate("section", int(section))
        lay = self._view.layout(d)
        ptr = lay.array("section_ptr")
        members = np.asarray(lay.array("section_rows")[int(ptr[local]):int(ptr[local + 1])], dtype=np.int64)
        return members + int(self._view.base("content")[self._view.code[d]])


class _SectionDoc:
    def __init__(self, view):
        self._view = view

    def __getitem__(self, section):
        d, local = self._view.locate("section", int(section))
        return self._view.to_global("document", d, int(self._view.layout(d).array("section_doc")[local]))


class DirectoryColumns(_Rows):
    """Directory nodes (domain, folders, documents, sections)."""

    kind = "dir"

    def __init__(self, view):
        super().__init__(view)
        col = lambda name, conv=None: _Column(view, "dir", "directories", name, conv)  # noqa: E731
        self.title, self.full_path, self.summary = col("title"), col("full_path", _tuple), col("summary")
        self.kind_of, self.level = col("kind"), col("level")

    def _csr(self, prefix: str, row: int, kind: str) -> list[int]:
        d, local = self._view.locate("dir", int(row))
        ptr, idx = self._view.layout(d).csr(prefix)
        base = int(self._view.base(kind)[self._view.code[d]])
        return [int(x) + base for x in idx[int(ptr[local]):int(ptr[local + 1])]]

    def children(self, row: int) -> list[int]:
        """Child directory rows (sorted)."""
        return self._csr("dir_children", row, "dir")

    def contents(self, row: int) -> list[int]:
        """Content rows whose parent node is this directory (sorted)."""
        return self._csr("dir_contents", row, "content")

    def parent(self, row: int) -> Optional[int]:
        d, local = self._view.locate("dir", int(row))
        p = int(self._view.layout(d).array("dir_parent")[local])
        return None if p < 0 else self._view.to_global("dir", d, p)

    def roots(self, domain: str) -> list[int]:
        """Directory rows of ``domain`` without a parent."""
        if domain not in self._view.code:
            return []
        parent = self._view.layout(domain).array("dir_parent")
        base = int(self._view.base("dir")[self._view.code[domain]])
        return [int(j) + base for j in np.flatnonzero(np.asarray(parent) < 0)]


class EntityColumns(_Rows):
    """Entity nodes."""

    kind = "entity"

    def __init__(self, view):
        super().__init__(view)
        self.name = _Column(view, "entity", "entities", "name")
        self.norm = _Column(view, "entity", "entities", "norm")

    def by_norm(self, domain: str, norm: str) -> Optional[int]:
        """The entity row of a normalized name in ``domain`` (its id is a digest of both)."""
        return self.row(domain, entity_id(domain, norm))


class IndexView:
    """Read-only view of one index build's layouts (see the module docstring).

    Parameters
    ----------
    reader : IndexReader
        The build (its manifest names the layouts).

    Raises
    ------
    schemas.errors.IndexError_
        An index with contents but no layouts (written before layouts existed).
    """

    def __init__(self, reader):
        self.reader = reader
        m = reader.manifest
        if not m.layouts and m.counts.get("contents", 0) > 0:
            raise IndexError_(f"the index at {reader.index_dir!r} was written by an older version and has no "
                              "query layouts: run `vdgr update` on it once (it writes them)")
        self.domains: tuple[str, ...] = tuple(sorted(m.layouts))
        self.code = {d: i for i, d in enumerate(self.domains)}
        refs = [m.layouts[d] for d in self.domains]
        self._bases = {kind: np.concatenate([[0], np.cumsum([getattr(r, _COUNT_FIELD[kind]) for r in refs])])
                       .astype(np.int64) for kind in KINDS}
        self._base_lists = {kind: [int(x) for x in b] for kind, b in self._bases.items()}
        self._layouts: dict[str, DomainLayout] = {}
        self._columns: dict[tuple, object] = {}
        self._lock = threading.Lock()
        self.contents = ContentColumns(self)
        self.directories = DirectoryColumns(self)
        self.entities = EntityColumns(self)
        self.sections = SectionIndex(self)

    # ------------------------------------------------------------------ numbering
    def base(self, kind: str) -> np.ndarray:
        """First global row of each domain (and the total last) for ``kind``."""
        return self._bases[kind]

    def count(self, kind: str, domain: str) -> int:
        i = self.code[domain]
        b = self._base_lists[kind]
        return b[i + 1] - b[i]

    def locate(self, kind: str, row: int) -> tuple[str, int]:
        """(domain, local number) of a global row."""
        b = self._base_lists[kind]
        if row < 0 or row >= b[-1]:
            raise IndexError(f"{kind} row {row} out of range")
        i = bisect.bisect_right(b, row) - 1
        return self.domains[i], row - b[i]

    def to_global(self, kind: str, domain: str, local: int) -> int:
        return self._base_lists[kind][self.code[domain]] + int(local)

    def split(self, kind: str, rows: np.ndarray) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Group global ``rows`` by domain: (domain, positions in ``rows``, local numbers)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return
        b = self._bases[kind]
        dom = np.searchsorted(b, rows, side="right") - 1
        if (dom < 0).any() or (rows >= b[-1]).any():
            raise IndexError(f"{kind} rows out of range")
        for i in np.unique(dom):
            where = np.flatnonzero(dom == i)
            yield self.domains[int(i)], where, rows[where] - b[i]

    def domain_rows(self, kind: str, domain: str) -> np.ndarray:
        """All global rows of ``kind`` in ``domain``."""
        i = self.code[domain]
        b = self._base_lists[kind]
        return np.arange(b[i], b[i + 1], dtype=np.int64)

    # ------------------------------------------------------------------ layouts
    def layout(self, domain: str) -> DomainLayout:
        """``domain``'s layout, opened (memory-mapped) on first use."""
        lay = self._layouts.get(domain)
        if lay is None:
            with self._lock:
                lay = self._layouts.get(domain)
                if lay is None:
                    lay = self._layouts[domain] = DomainLayout(self.reader.layout_folder(domain),
                                                                self.reader.block_file)
        return lay

    def store_column(self, domain: str, store: str, name: str):
        """Column ``name`` of a domain's document store (a memory-mapped Arrow array)."""
        key = (domain, store, name)
        col = self._columns.get(key)
        if col is None:
            col = self.layout(domain).store(store).column(name)
            self._columns[key] = col
        return col

    def readable_below(self, domain: str, local_dirs: np.ndarray, readable: np.ndarray) -> np.ndarray:
        """For each directory: does a content of a readable ACL class lie at or below it."""
        lay = self.layout(domain)
        ptr, idx = lay.csr("dir_below")
        values, owner = csr_gather(ptr, idx, local_dirs)
        out = np.zeros(len(local_dirs), dtype=bool)
        if len(values):
            hit = readable[np.asarray(values, dtype=np.int64)]
            out[np.unique(owner[hit])] = True
        return out

    # ------------------------------------------------------------------ tree
    def descendant_contents(self, dir_row: int, max_nodes: int = 100_000) -> list[int]:
        """Content rows anywhere under directory ``dir_row`` (top-down, document order)."""
        out: list[int] = []
        stack = [int(dir_row)]
        seen = 0
        d = self.directories
        while stack and seen < max_nodes:
            node = stack.pop()
            seen += 1
            out.extend(d.contents(node))
            stack.extend(reversed(d.children(node)))
        return out

    def parent_dir(self, dir_row: int) -> Optional[int]:
        return self.directories.parent(dir_row)

    def section_node(self, section: int) -> Optional[int]:
        return self.sections.node(section)


def top_k(scores: np.ndarray, rows: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Best ``k`` (row, score) of ``rows`` (global rows, already in scope) by ``scores``; ties
    broken by row (the id order)."""
    rows = np.asarray(rows, dtype=np.int64)
    if k <= 0 or len(rows) == 0:
        return []
    s = np.asarray(scores, dtype=np.float64)
    if len(s) > 4 * k:
        # only rows scoring at least the k-th best can be chosen (all of its ties kept)
        kth = np.partition(s, len(s) - k)[len(s) - k]
        keep = np.flatnonzero(s >= kth)
        rows, s = rows[keep], s[keep]
    order = np.lexsort((rows, -s))[:k]
    return [(int(rows[i]), float(s[i])) for i in order]


__all__ = ["IndexView", "QueryScope", "top_k", "csr_gather"]
