"""In-memory columns of an index, loaded once per :class:`KnowledgeBase`.

Every search of the query module runs over these arrays with a boolean scope mask that is
computed *before* any top-k selection, so rows a user may not see never become candidates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pyarrow as pa

from schemas import tables as T
from vdgr_core.store.filters import SearchScope


@dataclass(frozen=True)
class QueryScope:
    """A :class:`SearchScope` (groups, domains, versions) plus an optional collection filter.

    Collections are what the DCD router may choose inside a domain; they narrow the search,
    they are never an access rule (access is ``search.groups``).
    """

    search: SearchScope
    collections: Optional[tuple[str, ...]] = None

    @property
    def groups(self) -> tuple[str, ...]:
        return self.search.groups

    def with_domains(self, domains) -> "QueryScope":
        return QueryScope(self.search.with_domains(domains), self.collections)


_MASK_CACHE = 256     # scope masks kept per row set (one per distinct user groups x routing choice)


def _vectors(table: pa.Table, dim: int) -> np.ndarray:
    if table.num_rows == 0:
        return np.zeros((0, dim), dtype=np.float32)
    col = table.column("vector").combine_chunks()
    flat = col.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return np.ascontiguousarray(flat.reshape(table.num_rows, dim))


def _strs(table: pa.Table, name: str) -> np.ndarray:
    return np.array(table.column(name).to_pylist(), dtype=object)


def _lists(table: pa.Table, name: str) -> list[tuple[str, ...]]:
    return [tuple(v or ()) for v in table.column(name).to_pylist()]


def _id_rank(ids: np.ndarray) -> np.ndarray:
    """Rank of each row's id in sorted id order: the stable tie-break of every top-k."""
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(ids.astype(str), kind="stable")] = np.arange(len(ids))
    return rank


@dataclass
class _Rows:
    """Shared by contents and directories: ids, scope columns, vectors, masks."""

    ids: np.ndarray
    domain: np.ndarray
    collection: np.ndarray
    version: np.ndarray
    acl: list[tuple[str, ...]]
    vectors: np.ndarray
    id_rank: np.ndarray = field(init=False)
    index: dict[str, int] = field(init=False)
    _visible: dict[tuple[str, ...], np.ndarray] = field(init=False, default_factory=dict)
    _codes: dict[str, tuple[dict, np.ndarray]] = field(init=False, default_factory=dict)
    _masks: dict[tuple, np.ndarray] = field(init=False, default_factory=dict)
    _sims: tuple = field(init=False, default=(None, None))

    def __post_init__(self):
        self.id_rank = _id_rank(self.ids)
        self.index = {str(i): n for n, i in enumerate(self.ids)}
        # integer codes of the scope columns, built once: a per-query ``np.isin`` on object
        # arrays of strings cost milliseconds per call over ten thousand rows
        for name in ("domain", "version", "collection"):
            col = getattr(self, name)
            uniq, inv = np.unique(col.astype(str), return_inverse=True) if len(col) else ([], np.zeros(0, int))
            self._codes[name] = ({str(u): n for n, u in enumerate(uniq)}, inv.astype(np.int32))

    def __len__(self) -> int:
        return len(self.ids)

    def in_values(self, column: str, values) -> np.ndarray:
        """Rows whose ``column`` (domain, version or collection) is one of ``values``."""
        lookup, codes = self._codes[column]
        wanted = [lookup[v] for v in values if v in lookup]
        if not wanted:
            return np.zeros(len(codes), dtype=bool)
        if len(wanted) == 1:
            return codes == wanted[0]
        return np.isin(codes, np.array(wanted, dtype=np.int32))

    def visible(self, groups: tuple[str, ...]) -> np.ndarray:
        """Rows whose ACL lets ``groups`` see them (public rows are visible to all)."""
        key = tuple(sorted(set(groups)))
        if key not in self._visible:
            gs = set(key)
            self._visible[key] = np.fromiter(
                (not acl or bool(gs.intersection(acl)) for acl in self.acl), dtype=bool, count=len(self.acl))
        return self._visible[key]

    def mask(self, scope: QueryScope) -> np.ndarray:
        """Visible rows inside the scope's domains, versions and collections (read-only).

        Masks are cached per scope (a query asks for the same one from every route); the
        cache is bounded and the arrays are read-only so no caller can alter a shared one.
        """
        s = scope.search
        key = (tuple(sorted(set(scope.groups))), s.domains, s.versions, scope.collections)
        m = self._masks.get(key)
        if m is not None:
            return m
        m = self.visible(scope.groups).copy()
        if s.domains is not None:
            m &= self.in_values("domain", s.domains)
        if s.versions is not None:
            m &= self.in_values("version", s.versions)
        if scope.collections is not None:
            m &= self.in_values("collection", scope.collections)
        m.setflags(write=False)
        if len(self._masks) >= _MASK_CACHE:
            self._masks.pop(next(iter(self._masks)))
        self._masks[key] = m
        return m

    def similarities(self, qvec: np.ndarray) -> np.ndarray:
        """Cosine of every row with ``qvec`` (read-only; the last query's result is reused,
        since routing, the routes and backtracking all ask for it)."""
        if len(self) == 0:
            return np.zeros(0, dtype=np.float32)
        q = np.asarray(qvec, dtype=np.float32)
        key = q.tobytes()
        last_key, last = self._sims
        if last_key == key:
            return last
        out = self.vectors @ q
        out.setflags(write=False)
        self._sims = (key, out)
        return out


def top_k(scores: np.ndarray, mask: np.ndarray, k: int, id_rank: np.ndarray) -> list[tuple[int, float]]:
    """Best ``k`` (row, score) among rows where ``mask`` is True; ties broken by id.

    The mask is applied before selection (pre-filter), never after.
    """
    cand = np.flatnonzero(mask)
    if k <= 0 or cand.size == 0:
        return []
    s = scores[cand]
    order = np.lexsort((id_rank[cand], -s))[:k]
    return [(int(cand[i]), float(s[i])) for i in order]


@dataclass
class Contents(_Rows):
    """Content nodes (chunks)."""

    text: list[str] = field(default_factory=list)
    title: list[str] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    path: list[tuple[str, ...]] = field(default_factory=list)
    parent_id: list[str] = field(default_factory=list)
    position: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    entities: list[tuple[str, ...]] = field(default_factory=list)
    page: list[Optional[int]] = field(default_factory=list)   # None: unpaged format or older index
    flags: list[tuple[str, ...]] = field(default_factory=list)   # prompt-injection signals per chunk


@dataclass
class Directories(_Rows):
    """Directory nodes (domain, folders, documents, sections)."""

    full_path: list[tuple[str, ...]] = field(default_factory=list)
    parent_id: list[str] = field(default_factory=list)
    title: list[str] = field(default_factory=list)
    level: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kind: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    # set by IndexData: rows with a content the groups may read somewhere below them
    gate: Optional[Callable[[tuple[str, ...]], np.ndarray]] = field(default=None, repr=False)
    _gated: dict = field(init=False, default_factory=dict, repr=False)

    def visible(self, groups: tuple[str, ...]) -> np.ndarray:
        """Rows the groups may read *and* under which they may read a content: a public folder
        holding only restricted documents is not shown (its title would name what it holds)."""
        base = super().visible(groups)
        if self.gate is None:
            return base
        key = tuple(sorted(set(groups)))
        if key not in self._gated:
            self._gated[key] = base & self.gate(key)
        return self._gated[key]


@dataclass
class Entities:
    """Entity nodes; ``by_norm`` maps (domain, normalized name) to the row."""

    ids: np.ndarray
    name: list[str]
    norm: list[str]
    domain: np.ndarray
    importance: np.ndarray
    vectors: np.ndarray
    id_rank: np.ndarray = field(init=False)
    index: dict[str, int] = field(init=False)
    by_norm: dict[tuple[str, str], int] = field(init=False)

    def __post_init__(self):
        self.id_rank = _id_rank(self.ids)
        self.index = {str(i): n for n, i in enumerate(self.ids)}
        self.by_norm = {(str(d), n): i for i, (d, n) in enumerate(zip(self.domain, self.norm))}

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class Edges:
    kind: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    domain: np.ndarray
    weight: np.ndarray


@dataclass
class Sections:
    """The evidence unit: the chunks of one section (one directory node) of one source file.

    A section is keyed on (source, parent directory id): directory nodes are merged on their
    title path, so two files with the same title share a node but stay two sections.
    ``of_row[r]`` is the section of content row ``r``; ``rows[s]`` its content rows in reading
    order; ``doc[s]`` the document (source file) code; ``id_rank[s]`` a stable tie-break.
    """

    of_row: np.ndarray
    rows: list[np.ndarray]
    doc: np.ndarray
    id_rank: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)


def _sections(c: Contents) -> Sections:
    n = len(c)
    if n == 0:
        z = np.zeros(0, dtype=np.int64)
        return Sections(z, [], z, z)
    keys = np.array([f"{s}\0{p or i}" for s, p, i in zip(c.source, c.parent_id, c.ids)], dtype=object)
    uniq, of_row = np.unique(keys.astype(str), return_inverse=True)
    order = np.lexsort((c.position, of_row))
    bounds = np.flatnonzero(np.diff(of_row[order])) + 1
    rows = np.split(order, bounds)
    _, doc = np.unique(np.array([u.split("\0", 1)[0] for u in uniq], dtype=str), return_inverse=True)
    return Sections(of_row.astype(np.int64), rows, doc.astype(np.int64), np.arange(len(uniq), dtype=np.int64))


@dataclass
class IndexData:
    """All columns the query side needs, plus the directory tree and the sections."""

    contents: Contents
    directories: Directories
    entities: Entities
    edges: Edges
    dir_children: dict[int, list[int]] = field(init=False)
    dir_contents: dict[int, list[int]] = field(init=False)
    sections: Sections = field(init=False)

    def __post_init__(self):
        self.sections = _sections(self.contents)
        d = self.directories
        self.dir_children = {}
        for i, pid in enumerate(d.parent_id):
            p = d.index.get(pid or "")
            if p is not None:
                self.dir_children.setdefault(p, []).append(i)
        self.dir_contents = {}
        for i, pid in enumerate(self.contents.parent_id):
            p = d.index.get(pid or "")
            if p is not None:
                self.dir_contents.setdefault(p, []).append(i)
        for lst in (*self.dir_children.values(), *self.dir_contents.values()):
            lst.sort()
        pid = self.contents.parent_id
        self._section_node = np.array([d.index.get(pid[int(rows[0])] or "", -1) for rows in self.sections.rows],
                                      dtype=np.int64)
        self._dir_parent = np.fromiter((d.index.get(p or "", -1) for p in d.parent_id), dtype=np.int64,
                                       count=len(d))
        self._content_parent = np.fromiter((d.index.get(p or "", -1) for p in self.contents.parent_id),
                                           dtype=np.int64, count=len(self.contents))
        d.gate = self._over_visible_contents

    def _over_visible_contents(self, groups: tuple[str, ...]) -> np.ndarray:
        """Directory rows with at least one content row ``groups`` may read below them."""
        marks = np.zeros(len(self.directories), dtype=bool)
        parents = self._content_parent[self.contents.visible(groups)]
        frontier = np.zeros_like(marks)
        frontier[parents[parents >= 0]] = True
        while frontier.any():
            marks |= frontier
            up = self._dir_parent[frontier]
            frontier = np.zeros_like(marks)
            frontier[up[up >= 0]] = True
            frontier &= ~marks
        return marks

    def section_node(self, section: int) -> Optional[int]:
        """The directory row of a section's node (None when its chunks have no parent node)."""
        i = int(self._section_node[section])
        return None if i < 0 else i

    def descendant_contents(self, dir_idx: int, max_nodes: int = 100_000) -> list[int]:
        """Content rows anywhere under directory ``dir_idx`` (top-down, document order)."""
        out: list[int] = []
        stack = [dir_idx]
        seen = 0
        while stack and seen < max_nodes:
            node = stack.pop()
            seen += 1
            out.extend(self.dir_contents.get(node, ()))
            stack.extend(reversed(self.dir_children.get(node, ())))
        return out

    def parent_dir(self, dir_idx: int) -> Optional[int]:
        return self.directories.index.get(self.directories.parent_id[dir_idx] or "")


def load_index_data(reader) -> IndexData:
    """Read the five tables of ``reader`` (an IndexReader) into memory once."""
    dim = reader.dim
    c = reader.arrow(T.CONTENTS)
    contents = Contents(
        ids=_strs(c, "chunk_id"), domain=_strs(c, "domain"), collection=_strs(c, "collection"),
        version=_strs(c, "version"), acl=_lists(c, "acl"), vectors=_vectors(c, dim),
        text=c.column("text").to_pylist(), title=c.column("title").to_pylist(),
        source=c.column("source").to_pylist(), path=_lists(c, "path"),
        parent_id=c.column("parent_id").to_pylist(),
        position=np.array(c.column("position").to_pylist(), dtype=np.int64),
        entities=_lists(c, "entities"),
        page=c.column("page").to_pylist() if "page" in c.column_names else [None] * c.num_rows,
        flags=_lists(c, "flags") if "flags" in c.schema.names else [()] * c.num_rows,
    )
    d = reader.arrow(T.DIRECTORIES)
    directories = Directories(
        ids=_strs(d, "node_id"), domain=_strs(d, "domain"), collection=_strs(d, "collection"),
        version=_strs(d, "version"), acl=_lists(d, "acl"), vectors=_vectors(d, dim),
        full_path=_lists(d, "full_path"), parent_id=d.column("parent_id").to_pylist(),
        title=d.column("title").to_pylist(),
        level=np.array(d.column("level").to_pylist(), dtype=np.int64),
        kind=d.column("kind").to_pylist(), summary=[s or "" for s in d.column("summary").to_pylist()],
    )
    e = reader.arrow(T.ENTITIES)
    entities = Entities(
        ids=_strs(e, "entity_id"), name=e.column("name").to_pylist(), norm=e.column("norm").to_pylist(),
        domain=_strs(e, "domain"),
        importance=np.array(e.column("importance").to_pylist(), dtype=np.float64),
        vectors=_vectors(e, dim),
    )
    g = reader.arrow(T.EDGES)
    edges = Edges(
        kind=_strs(g, "kind"), src=_strs(g, "src"), dst=_strs(g, "dst"), domain=_strs(g, "domain"),
        weight=np.array(g.column("weight").to_pylist(), dtype=np.float64),
    )
    return IndexData(contents, directories, entities, edges)
