"""The row state a domain's layout is built from, and how an update changes it.

A layout (vdgr_core/store/domain_layout.py) is a function of one domain's rows, normalized here
into a :class:`DomainRows`: contents, directories and entities sorted by id with nulls filled,
the entity graph's edges as id pairs, and the label postings of the directories. A build
normalizes the rows it reads from LanceDB (:func:`domain_rows`); an update starts from the
state the previous layout holds (:func:`rows_of_layout`) and applies its delta
(:func:`apply_delta`): the rows of unchanged documents are never read from the tables and their
labels never tokenized again. Both end in the same normalized state, so the layout an update
writes is the one a rebuild writes (tests/pipelines/test_update_property.py checks the folders).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as T
from vdgr_core.labels import content_words_of, label_keys_of
from vdgr_core.store.vector_blocks import BlockedVectors, PatchedVectors, RowVectors

_STR_LIST = pa.list_(pa.string())
VECTOR = pa.list_(pa.float32())      # a row's embedding (null: the table had none)
CONTENT_ROWS = pa.schema([("chunk_id", pa.string()), ("text", pa.string()), ("title", pa.string()),
                          ("source", pa.string()), ("path", _STR_LIST), ("parent_id", pa.string()),
                          ("page", pa.int32()), ("flags", _STR_LIST), ("version", pa.string()),
                          ("collection", pa.string()), ("acl_key", pa.string()), ("position", pa.int64())])
DIRECTORY_ROWS = pa.schema([("node_id", pa.string()), ("parent_id", pa.string()), ("title", pa.string()),
                            ("full_path", _STR_LIST), ("summary", pa.string()), ("kind", pa.string()),
                            ("level", pa.int32()), ("version", pa.string()), ("collection", pa.string()),
                            ("acl_key", pa.string()), ("source", pa.string())])
ENTITY_ROWS = pa.schema([("entity_id", pa.string()), ("name", pa.string()), ("norm", pa.string())])


@dataclass(frozen=True)
class EdgeList:
    """``has_entity`` (content -> entity) and ``cooccurs`` (entity -> entity) edges by ids."""

    src: np.ndarray          # S32
    dst: np.ndarray          # S32
    weight: np.ndarray       # float64, a stored 0 already counted as 1
    has: np.ndarray          # bool: has_entity (else cooccurs)

    def pairs(self) -> np.ndarray:
        """One key per edge: kind, src and dst (S65)."""
        kind = np.where(self.has, b"h", b"c").astype("S1")
        return np.char.add(np.char.add(kind, self.src), self.dst)


@dataclass(frozen=True)
class Postings:
    """Label postings: one (stem key, directory, term count) per stem of a directory's label,
    directories numbered as in :attr:`DomainRows.directories`, and each label's length."""

    keys: np.ndarray         # uint64
    dirs: np.ndarray         # int64
    tfs: np.ndarray          # int64
    lengths: np.ndarray      # float32, one per directory


@dataclass(frozen=True)
class DomainRows:
    """One domain's rows, normalized: what its layout is a function of."""

    contents: pa.Table       # CONTENT_ROWS, sorted by chunk_id
    directories: pa.Table    # DIRECTORY_ROWS, sorted by node_id
    entities: pa.Table       # ENTITY_ROWS, sorted by entity_id
    edges: EdgeList
    postings: Postings
    # each content's / directory's embedding in the rows' order (n x dim; None when a row has
    # none or the rows disagree on the length: the layout then holds none). A build has a
    # float32 matrix; an update a PatchedVectors over the previous layout's blocks
    # (vdgr_core/store/vector_blocks.py), read only where a block is written again
    content_vectors: Optional[RowVectors] = None
    dir_vectors: Optional[RowVectors] = None


# ------------------------------------------------------------------ column helpers
def column(table: pa.Table, name: str, type_: pa.DataType, default=None) -> pa.Array:
    """Column ``name`` as one array of ``type_`` (absent: ``default`` everywhere)."""
    if name not in table.column_names:
        return pa.array([default] * table.num_rows, type_)
    col = table.column(name)
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return col.cast(type_) if col.type != type_ else col


def strings(table: pa.Table, name: str) -> pa.Array:
    """A string column with nulls as empty strings."""
    return pc.fill_null(column(table, name, pa.string()), "")


def lists(table: pa.Table, name: str) -> pa.Array:
    """A list<string> column with nulls as empty lists."""
    values = column(table, name, _STR_LIST).to_pylist()
    return pa.array([v or [] for v in values], _STR_LIST)


def ids_of(values: pa.Array) -> np.ndarray:
    """``S32`` ids (hex strings) of a string array."""
    if len(values) == 0:
        return np.zeros(0, dtype="S32")
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object).astype("S32")


def _sorted_by(table: pa.Table, key: str) -> pa.Table:
    if table.num_rows == 0:
        return table
    return table.take(pc.sort_indices(table, sort_keys=[(key, "ascending")]))


def _sorted_with_vectors(rows: pa.Table, key: str, raw: pa.Table) -> tuple[pa.Table, Optional[np.ndarray]]:
    """``rows`` sorted by ``key``, and ``raw``'s vector column as a matrix in the same order."""
    vectors = vector_matrix(raw.column("vector")) if "vector" in raw.column_names else None
    if rows.num_rows == 0:
        return rows, vectors
    order = pc.sort_indices(rows, sort_keys=[(key, "ascending")])
    if vectors is not None:
        vectors = vectors[order.to_numpy(zero_copy_only=False)]
    return rows.take(order), vectors


def _acl_keys(table: pa.Table) -> pa.Array:
    """Each row's ACL class as text: its groups sorted and deduplicated, ``|``-separated."""
    return pa.array(["|".join(sorted(set(a or ()))) for a in column(table, "acl", _STR_LIST).to_pylist()],
                    pa.string())


# ------------------------------------------------------------------ normalizing rows
def normalize_contents(table: pa.Table) -> tuple[pa.Table, Optional[np.ndarray]]:
    """Content rows as ``CONTENT_ROWS`` sorted by id, and their vectors in that order."""
    t = pa.table([strings(table, "chunk_id"), column(table, "text", pa.string()),
                  column(table, "title", pa.string()), strings(table, "source"), lists(table, "path"),
                  strings(table, "parent_id"), column(table, "page", pa.int32()), lists(table, "flags"),
                  strings(table, "version"), strings(table, "collection"), _acl_keys(table),
                  pc.fill_null(column(table, "position", pa.int64()), 0)], schema=CONTENT_ROWS)
    return _sorted_with_vectors(t, "chunk_id", table)


def normalize_directories(table: pa.Table) -> tuple[pa.Table, Optional[np.ndarray]]:
    """Directory rows as ``DIRECTORY_ROWS`` sorted by id, and their vectors in that order."""
    t = pa.table([strings(table, "node_id"), strings(table, "parent_id"), column(table, "title", pa.string()),
                  lists(table, "full_path"), strings(table, "summary"), column(table, "kind", pa.string()),
                  pc.fill_null(column(table, "level", pa.int32()), 0), strings(table, "version"),
                  strings(table, "collection"), _acl_keys(table), strings(table, "source")],
                 schema=DIRECTORY_ROWS)
    return _sorted_with_vectors(t, "node_id", table)


def normalize_entities(table: pa.Table) -> pa.Table:
    t = pa.table([strings(table, "entity_id"), column(table, "name", pa.string()),
                  column(table, "norm", pa.string())], schema=ENTITY_ROWS)
    return _sorted_by(t, "entity_id")


def edge_list(table: pa.Table) -> EdgeList:
    """The has_entity and cooccurs edges of an edges table (other kinds dropped)."""
    kind = strings(table, "kind").to_numpy(zero_copy_only=False)
    keep = (kind == T.HAS_ENTITY) | (kind == T.COOCCURS)
    w = np.asarray(column(table, "weight", pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64)
    w = np.where(np.isnan(w) | (w == 0), 1.0, w)
    src, dst, has = ids_of(strings(table, "src"))[keep], ids_of(strings(table, "dst"))[keep], (kind == T.HAS_ENTITY)[keep]
    swap = ~has & (src > dst)              # an entity pair is undirected: lower id first
    src, dst = np.where(swap, dst, src), np.where(swap, src, dst)
    return EdgeList(src, dst, w[keep], has)


def label_postings(directories: pa.Table) -> Postings:
    """Tokenize the labels of normalized ``directories``: title path below the domain + summary."""
    paths = directories.column("full_path").to_pylist()
    labelled = [len(p) > 1 for p in paths]
    texts = pa.array([" ".join(p[1:]) + "\n" + s if ok else "" for p, s, ok in
                      zip(paths, directories.column("summary").to_pylist(), labelled)], pa.string())
    words, dirs = content_words_of(texts)
    keys = label_keys_of(words)
    return _postings(keys, dirs.astype(np.int64), np.ones(len(keys), dtype=np.int64), len(paths))


def _postings(keys: np.ndarray, dirs: np.ndarray, counts: np.ndarray, n_dirs: int) -> Postings:
    """Postings from (key, directory, count) triples, merged per (key, directory) and sorted."""
    order = np.lexsort((dirs, keys))
    keys, dirs, counts = keys[order], dirs[order], counts[order]
    if not len(keys):
        return Postings(keys.astype(np.uint64), dirs, counts, np.zeros(n_dirs, dtype=np.float32))
    starts = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]) | (dirs[1:] != dirs[:-1])])
    tfs = np.add.reduceat(counts, starts)
    lengths = np.bincount(dirs, weights=counts, minlength=n_dirs).astype(np.float32)
    return Postings(keys[starts].astype(np.uint64), dirs[starts], tfs.astype(np.int64), lengths)


def domain_rows(contents: pa.Table, directories: pa.Table, entities: pa.Table, edges: pa.Table) -> DomainRows:
    """Normalize one domain's table rows (a build)."""
    contents, content_vectors = normalize_contents(contents)
    dirs, dir_vectors = normalize_directories(directories)
    return DomainRows(contents, dirs, normalize_entities(entities), edge_list(edges), label_postings(dirs),
                      content_vectors, dir_vectors)


# ------------------------------------------------------------------ from a layout, and a delta
def vector_matrix(vectors) -> Optional[np.ndarray]:
    """A vector column (``list`` or ``fixed_size_list`` of floats) as a ``float32`` matrix, or
    ``None`` when it is empty, a row has no vector or the rows disagree on its length (the
    layout then holds none, and dense search reads the table)."""
    vec = vectors.combine_chunks() if isinstance(vectors, pa.ChunkedArray) else vectors
    if vec.null_count or len(vec) == 0:
        return None
    if pa.types.is_fixed_size_list(vec.type):
        dim = vec.type.list_size
    else:
        vec = vec.cast(VECTOR) if vec.type != VECTOR else vec
        lengths = pc.list_value_length(vec).to_numpy(zero_copy_only=False)
        if lengths.min() != lengths.max():
            return None
        dim = int(lengths[0])
    if dim == 0:
        return None
    return np.asarray(vec.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(vec), dim)


def rows_of_layout(lay) -> DomainRows:
    """The normalized rows a layout (``DomainLayout``) was built from."""
    classes = ["|".join(c) for c in lay.acl_classes]
    versions, collections = lay.versions, lay.collections

    def decode(codes, vocabulary) -> pa.Array:
        return pa.array(np.asarray(vocabulary, dtype=object)[np.asarray(codes, dtype=np.int64)]
                        if len(codes) else [], pa.string())

    def ids(name) -> pa.Array:
        return pa.array(np.asarray(lay.array(name)).astype("U32"), pa.string()) if len(lay.array(name)) \
            else pa.array([], pa.string())

    cs = lay.store("contents")
    contents = pa.table([ids("content_ids"), cs.column("text"), cs.column("title"), cs.column("source"),
                         cs.column("path"), cs.column("parent_id"), cs.column("page"), cs.column("flags"),
                         cs.column("version"), cs.column("collection"), decode(lay.array("content_acl"), classes),
                         pa.array(np.asarray(lay.array("content_position"), dtype=np.int64), pa.int64())],
                        schema=CONTENT_ROWS)
    ds = lay.store("directories")
    dirs = pa.table([ids("dir_ids"), ds.column("parent_id"), ds.column("title"), ds.column("full_path"),
                     ds.column("summary"), ds.column("kind"), ds.column("level"),
                     decode(lay.array("dir_version"), versions), decode(lay.array("dir_collection"), collections),
                     decode(lay.array("dir_acl"), classes), ds.column("source")], schema=DIRECTORY_ROWS)
    es = lay.store("entities")
    entities = pa.table([ids("entity_ids"), es.column("name"), es.column("norm")], schema=ENTITY_ROWS)
    # graph: each edge once (content -> entity, or the lower entity -> the higher one)
    g = lay.graph.tocoo()
    upper = g.row < g.col
    a, b, w = g.row[upper], g.col[upper], g.data[upper].astype(np.float64)
    node_ids = np.concatenate([np.asarray(lay.array("content_ids")), np.asarray(lay.array("entity_ids"))])
    edges = EdgeList(node_ids[a], node_ids[b], w, a < lay.nc)
    keys, ptr = np.asarray(lay.array("label_keys")), np.asarray(lay.array("label_ptr"))
    postings = Postings(np.repeat(keys, np.diff(ptr)), np.asarray(lay.array("label_dirs"), dtype=np.int64),
                        np.asarray(lay.array("label_tf"), dtype=np.int64),
                        np.asarray(lay.array("label_len"), dtype=np.float32))
    # the vectors stay in their blocks: the patch reads only the blocks it writes again
    return DomainRows(contents, dirs, entities, edges, postings, lay.vectors("content"), lay.vectors("dir"))


@dataclass(frozen=True)
class DomainDelta:
    """What an update removes from and adds to one domain (table rows, as the update has them).

    ``*_gone`` are ids (an id also in the added rows is replaced by them); ``edges_gone`` the
    removed edges' rows (``kind``, ``src``, ``dst``)."""

    contents_gone: frozenset
    directories_gone: frozenset
    entities_gone: frozenset
    edges_gone: pa.Table
    contents: pa.Table
    directories: pa.Table
    entities: pa.Table
    edges: pa.Table


@dataclass(frozen=True)
class _Merge:
    """Where each row of ``old`` kept and ``added`` goes in the merged, sorted rows."""

    kept: np.ndarray         # old rows kept, ascending
    kept_to: np.ndarray      # their new numbers
    added_to: np.ndarray     # each added row's new number
    n: int

    def old_to_new(self, n_old: int) -> np.ndarray:
        """For each old row its new number (-1: removed)."""
        out = np.full(n_old, -1, dtype=np.int64)
        out[self.kept] = self.kept_to
        return out

    def vectors(self, old: Optional[RowVectors], added: Optional[np.ndarray]) -> Optional[RowVectors]:
        """The merged rows' vectors: the kept rows of ``old`` and ``added``, in the merged
        order. ``None`` when a part with rows has none, or the parts disagree on the length, as
        a rebuild decides. From a previous layout's blocks, a :class:`PatchedVectors` that reads
        them only for the blocks written again; otherwise a matrix (``old`` read once, in
        ascending order)."""
        parts = [(old, len(self.kept)), (added, len(self.added_to))]
        if self.n == 0 or any(m is None for m, k in parts if k):
            return None
        dims = {m.shape[1] for m, k in parts if k}
        if len(dims) != 1:
            return None
        dim = dims.pop()
        if isinstance(old, BlockedVectors) and len(self.kept):
            return PatchedVectors(old, self.kept, self.kept_to,
                                  added if added is not None else np.zeros((0, dim), np.float32), self.added_to, self.n)
        out = np.empty((self.n, dim), dtype=np.float32)
        if len(self.kept):
            out[self.kept_to] = old[self.kept]
        if len(self.added_to):
            out[self.added_to] = added
        return out


def _merged(old: pa.Table, key: str, gone, added: pa.Table) -> tuple[pa.Table, _Merge]:
    """``old`` without ``gone`` and ``added`` ids, plus ``added``, sorted by ``key``; and where
    each row went. The rows are copied once (one ``take`` over both tables)."""
    drop = set(gone) | set(added.column(key).to_pylist())
    keep = np.ones(old.num_rows, dtype=bool)
    if drop and old.num_rows:
        keep = ~pc.is_in(old.column(key), value_set=pa.array(sorted(drop), pa.string())).to_numpy(
            zero_copy_only=False)
    kept = np.flatnonzero(keep)
    keys = pa.concat_arrays([old.column(key).combine_chunks().take(pa.array(kept, pa.int64())),
                             added.column(key).combine_chunks().cast(pa.string())])
    order = pc.sort_indices(keys).to_numpy(zero_copy_only=False) if len(keys) else np.zeros(0, dtype=np.int64)
    source = np.concatenate([kept, old.num_rows + np.arange(added.num_rows)]).astype(np.int64)
    new_number = np.empty(len(order), dtype=np.int64)
    new_number[order] = np.arange(len(order))
    both = pa.concat_tables([old, added.cast(old.schema)]) if added.num_rows else old
    merge = _Merge(kept, new_number[:len(kept)], new_number[len(kept):], len(order))
    return both.take(pa.array(source[order], pa.int64())), merge


def apply_delta(rows: DomainRows, delta: DomainDelta) -> DomainRows:
    """``rows`` after an update's ``delta``: the state a rebuild would normalize."""
    added_contents, added_content_vectors = normalize_contents(delta.contents)
    contents, c_merge = _merged(rows.contents, "chunk_id", delta.contents_gone, added_contents)
    added_dirs, added_dir_vectors = normalize_directories(delta.directories)
    dirs, d_merge = _merged(rows.directories, "node_id", delta.directories_gone, added_dirs)
    dir_map = d_merge.old_to_new(rows.directories.num_rows)
    entities, _ = _merged(rows.entities, "entity_id", delta.entities_gone, normalize_entities(delta.entities))
    # edges: the removed ones out, the added ones in (a pair removed and added is the new row)
    gone = edge_list(delta.edges_gone)
    keep = ~np.isin(rows.edges.pairs(), gone.pairs()) if len(gone.src) else np.ones(len(rows.edges.src), bool)
    new = edge_list(delta.edges)
    edges = EdgeList(*(np.concatenate([getattr(rows.edges, f)[keep], getattr(new, f)])
                       for f in ("src", "dst", "weight", "has")))
    # labels: the kept directories' postings renumbered, the added ones tokenized
    p = rows.postings
    moved = dir_map[p.dirs] if len(p.dirs) else p.dirs
    still = moved >= 0
    fresh = label_postings(added_dirs)
    added_at = d_merge.added_to
    postings = _postings(np.concatenate([p.keys[still], fresh.keys]),
                         np.concatenate([moved[still], added_at[fresh.dirs] if len(fresh.dirs) else fresh.dirs]),
                         np.concatenate([p.tfs[still], fresh.tfs]), dirs.num_rows)
    return DomainRows(contents, dirs, entities, edges, postings,
                      c_merge.vectors(rows.content_vectors, added_content_vectors),
                      d_merge.vectors(rows.dir_vectors, added_dir_vectors))


__all__ = ["DomainRows", "DomainDelta", "EdgeList", "Postings", "domain_rows", "rows_of_layout", "apply_delta",
           "label_postings", "normalize_contents", "normalize_directories", "normalize_entities", "edge_list",
           "column", "strings", "lists", "ids_of", "vector_matrix", "VECTOR", "CONTENT_ROWS", "DIRECTORY_ROWS",
           "ENTITY_ROWS"]
