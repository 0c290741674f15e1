"""Build a domain's query layout (vdgr_core/store/domain_layout.py) from its rows.

``assemble`` is a plain function of one domain's normalized rows (vdgr_core/store/layout_rows.py)
and its entity vectors. A build's worker gets one domain's rows (the fragments its pipeline
wrote, transforms/layouts.py) and publishes that domain's layout (:func:`layout_of_rows`). An
update, in its driver, starts from each changed domain's previous layout and applies its delta,
so the rows of unchanged documents are not read again; a domain without a usable previous
layout is read from the tables the previous manifest names (one domain at a time, a filter on
``domain``; tables of at most ``WHOLE_READ_BYTES`` are read once and split by domain instead,
since each filtered read has a fixed cost) and gets the delta too (:func:`write_layouts`).
"""
from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import sparse

from schemas import tables as T
from vdgr_core.memory import release_unused_memory
from vdgr_core.store.domain_layout import LayoutRef, publish_layout
from vdgr_core.store.failpoints import failpoint
from vdgr_core.store.layout_rows import (DomainDelta, DomainRows, EdgeList, apply_delta, domain_rows, ids_of,
                                         rows_of_layout)
from vdgr_core.store.pending import PendingPublish
from vdgr_core.store.vector_blocks import BlockAssignment, write_blocks

_log = logging.getLogger("vdgr.store")

CONTENT_COLUMNS = ("chunk_id", "source", "parent_id", "position", "version", "collection", "acl", "text",
                   "title", "path", "page", "flags", "vector")
DIRECTORY_COLUMNS = ("node_id", "parent_id", "version", "collection", "acl", "full_path", "title", "summary",
                     "kind", "level", "source", "vector")
ENTITY_COLUMNS = ("entity_id", "name", "norm")
EDGE_COLUMNS = ("kind", "src", "dst", "weight")

SYNONYMS_PER_ENTITY = 5     # strongest synonym edges kept per entity
_BLOCK = 2048               # entity rows per similarity block

_STR_LIST = pa.list_(pa.string())
CONTENT_STORE = pa.schema([("text", pa.string()), ("title", pa.string()), ("source", pa.string()),
                           ("path", _STR_LIST), ("parent_id", pa.string()), ("page", pa.int32()),
                           ("flags", _STR_LIST), ("version", pa.string()), ("collection", pa.string())])
DIRECTORY_STORE = pa.schema([("title", pa.string()), ("full_path", _STR_LIST), ("summary", pa.string()),
                             ("kind", pa.string()), ("level", pa.int32()), ("parent_id", pa.string()),
                             ("source", pa.string())])
ENTITY_STORE = pa.schema([("name", pa.string()), ("norm", pa.string())])


@dataclass(frozen=True)
class LayoutOptions:
    """What a layout holds besides the rows: the entity graph and its synonym edges."""

    graph: bool = True
    synonym_min: float = 0.9      # synonym edges stored from this cosine (a query may ask for more)


def _lookup(sorted_ids: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Local number of each key (``S32``) in ``sorted_ids`` (``-1`` when absent)."""
    out = np.full(len(keys), -1, dtype=np.int32)
    if len(sorted_ids) == 0 or len(keys) == 0:
        return out
    pos = np.minimum(np.searchsorted(sorted_ids, keys), len(sorted_ids) - 1)
    hit = sorted_ids[pos] == keys
    out[hit] = pos[hit]
    return out


def _codes(values: pa.Array, vocabulary: list[str]) -> np.ndarray:
    """Code of each value in the sorted ``vocabulary``."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int32)
    enc = pc.dictionary_encode(values)
    where = np.searchsorted(np.array(vocabulary, dtype=object), np.asarray(enc.dictionary.to_pylist(), dtype=object))
    return where.astype(np.int32)[enc.indices.to_numpy(zero_copy_only=False)]


def _distinct(*arrays: pa.Array) -> list[str]:
    out = {""}
    for a in arrays:
        out.update(pc.unique(a).to_pylist())
    return sorted(out)


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(pointers, indices) of pairs (row, col), each row's columns sorted."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    order = np.lexsort((cols, rows))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr, cols[order].astype(np.int32)


def _index_dtype(nnz: int):
    return np.int32 if nnz < 2 ** 31 - 1 else np.int64


def _below_classes(nd: int, parent: np.ndarray, content_dir: np.ndarray, content_class: np.ndarray,
                   n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the ACL classes of the contents at or below each directory: each (directory,
    class) pair is pushed to the parent until no new pair appears (at most the tree's depth)."""
    placed = content_dir >= 0
    width = max(1, n_classes)
    pairs = np.unique(content_dir[placed].astype(np.int64) * width + content_class[placed])
    frontier = pairs
    for _ in range(nd):
        if not len(frontier):
            break
        up = parent[frontier // width]
        has = up >= 0
        lifted = np.unique(up[has].astype(np.int64) * width + frontier[has] % width)
        frontier = np.setdiff1d(lifted, pairs, assume_unique=True)
        pairs = np.union1d(pairs, frontier)
    return _csr(pairs // width, pairs % width, nd)


def synonym_edges(vectors: np.ndarray, min_sim: float, per_node: int = SYNONYMS_PER_ENTITY) -> sparse.csr_matrix:
    """Symmetric edges between entities whose vectors are near-identical (HippoRAG's synonymy
    edges): cosine >= ``min_sim``, at most ``per_node`` per entity, weighted by the cosine.

    Rows are compared block by block (memory ``_BLOCK x n``; time ``n**2 * dim``)."""
    n = len(vectors)
    if n < 2 or min_sim > 1.0:
        return sparse.csr_matrix((n, n), dtype=np.float32)
    v = np.asarray(vectors, dtype=np.float32)
    src, dst, w = [], [], []
    for start in range(0, n, _BLOCK):
        sims = v[start:start + _BLOCK] @ v.T
        sims[np.arange(sims.shape[0]), np.arange(start, start + sims.shape[0])] = -1.0   # no self edge
        i, j = np.nonzero(sims >= min_sim)
        src.append(i + start)
        dst.append(j)
        w.append(sims[i, j])
    src_a, dst_a, w_a = np.concatenate(src), np.concatenate(dst), np.concatenate(w).astype(np.float64)
    if not len(src_a):
        return sparse.csr_matrix((n, n), dtype=np.float32)
    order = np.lexsort((dst_a, -w_a, src_a))          # strongest first within each entity, ties by index
    src_a, dst_a, w_a = src_a[order], dst_a[order], w_a[order]
    first = np.r_[0, np.flatnonzero(np.diff(src_a)) + 1]
    rank = np.arange(len(src_a)) - np.repeat(first, np.diff(np.r_[first, len(src_a)]))
    keep = rank < per_node
    m = sparse.csr_matrix((w_a[keep], (src_a[keep], dst_a[keep])), shape=(n, n), dtype=np.float64)
    m = m.maximum(m.T).tocsr()
    m.sort_indices()
    return m.astype(np.float32)


def _graph(content_ids: np.ndarray, entity_ids: np.ndarray, edges: EdgeList) -> sparse.csr_matrix:
    """Symmetric has_entity + cooccurs adjacency over contents then entities (local numbers)."""
    nc, ne = len(content_ids), len(entity_ids)
    n = nc + ne
    if len(edges.src) == 0 or n == 0:
        return sparse.csr_matrix((n, n), dtype=np.float64)
    has = edges.has
    a_content = _lookup(content_ids, edges.src).astype(np.int64)
    a_entity = _lookup(entity_ids, edges.src).astype(np.int64)
    b = _lookup(entity_ids, edges.dst).astype(np.int64)
    a = np.where(has, a_content, np.where(a_entity >= 0, a_entity + nc, -1))
    ok = (a >= 0) & (b >= 0)
    a, b, w = a[ok], b[ok] + nc, edges.weight[ok]
    keep = a != b
    a, b, w = a[keep], b[keep], w[keep]
    m = sparse.csr_matrix((np.concatenate([w, w]), (np.concatenate([a, b]), np.concatenate([b, a]))),
                          shape=(n, n), dtype=np.float64)
    m.sum_duplicates()
    m.sort_indices()
    return m


def _column(t: pa.Table, name: str) -> pa.Array:
    """Column ``name`` of ``t`` as one array (an empty one of its type when ``t`` has no rows)."""
    return t.column(name).combine_chunks() if t.num_rows else pa.array([], t.schema.field(name).type)


@dataclass(frozen=True)
class _Values:
    """The distinct ACL classes, versions and collections of a domain's contents and
    directories: the layout stores each row's as a code into these lists."""

    class_keys: list
    versions: list
    collections: list

    @classmethod
    def of(cls, contents: pa.Table, directories: pa.Table) -> "_Values":
        return cls(*(_distinct(_column(contents, name), _column(directories, name))
                     for name in ("acl_key", "version", "collection")))

    def codes(self, t: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The (ACL class, version, collection) codes of ``t``'s rows."""
        return (_codes(_column(t, "acl_key"), self.class_keys), _codes(_column(t, "version"), self.versions),
                _codes(_column(t, "collection"), self.collections))


def assemble(domain: str, rows: DomainRows, entity_vectors: np.ndarray,
             options: LayoutOptions = LayoutOptions()) -> tuple[dict, dict, dict, dict]:
    """The arrays, document stores and meta of ``domain``'s layout (see domain_layout.py), and
    its vectors to be written in blocks: kind -> (row vectors, ``BlockAssignment``).

    ``entity_vectors`` (one row per entity of ``rows.entities``, in its order) give the synonym
    edges."""
    contents, directories, entities = rows.contents, rows.directories, rows.entities
    dir_ids = ids_of(directories.column("node_id"))
    values = _Values.of(contents, directories)
    arrays, n_documents = _content_arrays(contents, dir_ids, values)
    arrays.update(_directory_arrays(directories, dir_ids, arrays, values))
    arrays.update(_label_arrays(rows.postings))
    # vectors: grouped into blocks by source document (vdgr_core/store/vector_blocks.py)
    blocks = {}
    for kind, vectors, table in (("content", rows.content_vectors, contents), ("dir", rows.dir_vectors, directories)):
        if vectors is not None:
            assignment = BlockAssignment.of_sources(table.column("source"))
            arrays.update(assignment.arrays(kind))
            blocks[kind] = (vectors, assignment)
    arrays.update(_entity_arrays(arrays["content_ids"], entities, rows.edges, entity_vectors, options))
    return arrays, _stores(contents, directories, entities), _meta(arrays, values, n_documents, options), blocks


def _content_arrays(contents: pa.Table, dir_ids: np.ndarray, values: _Values) -> tuple[dict, int]:
    """The arrays of the contents and of their sections ((source, parent node) groups in reading
    order), and the number of documents."""
    content_ids = ids_of(contents.column("chunk_id"))
    nc = len(content_ids)
    sources, parents = _column(contents, "source"), _column(contents, "parent_id")
    anchor = pc.if_else(pc.equal(parents, ""), _column(contents, "chunk_id"), parents)
    keys = pc.binary_join_element_wise(sources, anchor, "\x00")
    unique_keys = pc.unique(keys)
    unique_keys = unique_keys.take(pc.sort_indices(unique_keys))
    section_of = pc.index_in(keys, value_set=unique_keys).to_numpy(zero_copy_only=False).astype(np.int64) \
        if nc else np.zeros(0, dtype=np.int64)
    ns = len(unique_keys)
    position = _column(contents, "position").to_numpy(zero_copy_only=False)
    section_rows = np.lexsort((np.arange(nc), position, section_of)).astype(np.int32)
    section_ptr = np.zeros(ns + 1, dtype=np.int64)
    np.cumsum(np.bincount(section_of, minlength=ns), out=section_ptr[1:])
    doc_names = sorted(pc.unique(sources).to_pylist()) if nc else []
    first_rows = section_rows[section_ptr[:-1]] if ns else np.zeros(0, dtype=np.int32)
    section_doc = _codes(sources, doc_names)[first_rows] if ns else np.zeros(0, dtype=np.int32)
    content_dir = _lookup(dir_ids, ids_of(parents))
    section_dir = content_dir[first_rows] if ns else np.zeros(0, dtype=np.int32)
    c_class, c_version, c_collection = values.codes(contents)
    return {
        "content_ids": content_ids, "content_section": section_of.astype(np.int32),
        "content_dir": content_dir, "content_acl": c_class, "content_position": position.astype(np.int64),
        "content_version": c_version, "content_collection": c_collection,
        "section_ptr": section_ptr, "section_rows": section_rows, "section_doc": section_doc.astype(np.int32),
        "section_dir": section_dir.astype(np.int32),
    }, len(doc_names)


def _directory_arrays(directories: pa.Table, dir_ids: np.ndarray, content: dict, values: _Values) -> dict:
    """The directories' arrays: tree, contents, ACL classes below (``content``: the contents'
    arrays)."""
    nd = len(dir_ids)
    content_dir = content["content_dir"]
    dir_parent = _lookup(dir_ids, ids_of(_column(directories, "parent_id")))
    child = np.flatnonzero(dir_parent >= 0)
    children_ptr, children_idx = _csr(dir_parent[child], child, nd)
    placed = np.flatnonzero(content_dir >= 0)
    contents_ptr, contents_idx = _csr(content_dir[placed], placed, nd)
    below_ptr, below_idx = _below_classes(nd, dir_parent, content_dir, content["content_acl"],
                                          len(values.class_keys))
    d_class, d_version, d_collection = values.codes(directories)
    return {
        "dir_ids": dir_ids, "dir_parent": dir_parent, "dir_acl": d_class,
        "dir_version": d_version, "dir_collection": d_collection,
        "dir_children_ptr": children_ptr, "dir_children_idx": children_idx,
        "dir_contents_ptr": contents_ptr, "dir_contents_idx": contents_idx,
        "dir_below_ptr": below_ptr, "dir_below_idx": below_idx,
    }


def _label_arrays(p) -> dict:
    """The directories' label terms: keys, the directories holding each, term frequencies."""
    label_keys, first = np.unique(p.keys, return_index=True)
    return {
        "label_keys": label_keys.astype(np.uint64), "label_ptr": np.append(first, len(p.keys)).astype(np.int64),
        "label_dirs": p.dirs.astype(np.int32), "label_tf": p.tfs.astype(np.float32), "label_len": p.lengths,
    }


def _entity_arrays(content_ids: np.ndarray, entities: pa.Table, edges: EdgeList, entity_vectors: np.ndarray,
                   options: LayoutOptions) -> dict:
    """The entities, the graph over contents then entities, and the entities' synonym edges."""
    nc = len(content_ids)
    entity_ids = ids_of(entities.column("entity_id"))
    ne = len(entity_ids)
    graph = _graph(content_ids, entity_ids, edges) if options.graph else sparse.csr_matrix((nc + ne, nc + ne))
    idx_dtype = _index_dtype(graph.nnz)
    syn = synonym_edges(entity_vectors, options.synonym_min) if options.graph and ne else \
        sparse.csr_matrix((ne, ne))
    return {
        "entity_ids": entity_ids,
        "graph_ptr": graph.indptr.astype(idx_dtype), "graph_idx": graph.indices.astype(idx_dtype),
        "graph_w": graph.data.astype(np.float32),
        "synonym_ptr": syn.indptr.astype(np.int32), "synonym_idx": syn.indices.astype(np.int32),
        "synonym_w": syn.data.astype(np.float32),
    }


def _stores(contents: pa.Table, directories: pa.Table, entities: pa.Table) -> dict:
    """The document stores: the rows' fields the query reads, in the stores' schemas."""
    # a nullable number is written from its values, so the bytes under a null are always 0
    page = pa.array(_column(contents, "page").to_pylist(), pa.int32())
    return {
        "contents": contents.select(CONTENT_STORE.names).cast(CONTENT_STORE).set_column(
            CONTENT_STORE.get_field_index("page"), "page", page),
        "directories": directories.select(DIRECTORY_STORE.names).cast(DIRECTORY_STORE),
        "entities": entities.select(ENTITY_STORE.names).cast(ENTITY_STORE),
    }


def _meta(arrays: dict, values: _Values, n_documents: int, options: LayoutOptions) -> dict:
    """The layout's meta: counts, ACL classes, versions, collections, the (class, collection,
    version) combinations contents hold, and the graph options."""
    nc = len(arrays["content_ids"])
    combos = np.unique(np.stack([arrays["content_acl"], arrays["content_collection"], arrays["content_version"]]),
                       axis=1) if nc else np.zeros((3, 0), dtype=np.int64)
    return {
        "counts": {"contents": nc, "sections": len(arrays["section_ptr"]) - 1, "directories": len(arrays["dir_ids"]),
                   "entities": len(arrays["entity_ids"]), "documents": n_documents},
        "acl_classes": [k.split("|") if k else [] for k in values.class_keys], "versions": values.versions,
        "collections": values.collections,
        "visible": [[int(a), int(c), int(v)] for a, c, v in combos.T], "graph": bool(options.graph),
        "synonym_min": float(options.synonym_min), "synonyms_per_entity": SYNONYMS_PER_ENTITY,
    }


def build_layout(domain: str, contents: pa.Table, directories: pa.Table, entities: pa.Table, edges: pa.Table,
                 options: LayoutOptions = LayoutOptions(), entity_vectors: Optional[Mapping[str, np.ndarray]] = None
                 ) -> tuple[dict, dict, dict, dict]:
    """The layout of one domain's table rows (any order; other domains' rows filtered out), as
    :func:`assemble` returns it.

    ``entity_vectors``: entity id -> vector; by default the ``vector`` column of ``entities``."""
    rows = domain_rows(contents, directories, entities, edges)
    if entity_vectors is None:
        entity_vectors = _vectors_by_id(entities)
    return assemble(domain, rows, _aligned(rows, entity_vectors), options)


def _vectors_by_id(entities: pa.Table) -> dict[str, np.ndarray]:
    """Entity id -> vector (a row of one float32 matrix; entities without a vector left out)."""
    if "vector" not in entities.column_names or entities.num_rows == 0:
        return {}
    column = entities.column("vector").combine_chunks()
    ids = entities.column("entity_id").to_pylist()
    if not pa.types.is_fixed_size_list(column.type):
        return {i: np.asarray(v, dtype=np.float32) for i, v in zip(ids, column.to_pylist()) if v is not None}
    dim = column.type.list_size
    present = np.asarray(column.is_valid())
    values = pc.list_flatten(column.filter(present) if not present.all() else column)
    matrix = np.asarray(values, dtype=np.float32).reshape(-1, dim)
    return dict(zip((i for i, ok in zip(ids, present) if ok), matrix))


def _aligned(rows: DomainRows, vectors: Mapping[str, np.ndarray]) -> np.ndarray:
    ids = rows.entities.column("entity_id").to_pylist()
    dim = len(next(iter(vectors.values()))) if vectors else 0
    out = np.zeros((len(ids), dim), dtype=np.float32)
    for i, e in enumerate(ids):
        v = vectors.get(e)
        if v is not None:
            out[i] = v
    return out


def _domain_filter(domain: str):
    from lancedb.expr import col

    return col("domain").isin([domain])


_WANTED = {T.CONTENTS: CONTENT_COLUMNS, T.DIRECTORIES: DIRECTORY_COLUMNS, T.ENTITIES: ENTITY_COLUMNS,
           T.EDGES: EDGE_COLUMNS}
_GRAPH_EDGES = (T.HAS_ENTITY, T.COOCCURS)

#: the four tables are read whole and split by domain when they hold at most this many bytes
#: together and at least ``WHOLE_READ_MIN_DOMAINS`` domains are read: a filtered read costs ~5 ms
#: whatever it returns (EManual, 33 domains: 0.75 s in 165 filtered reads, 0.13 s whole)
WHOLE_READ_BYTES = 128 << 20
WHOLE_READ_MIN_DOMAINS = 4


def _columns(table, name: str, vectors: bool) -> list[str]:
    have = set(table.schema.names)
    wanted = _WANTED[name] + (("vector",) if vectors and name == T.ENTITIES else ())
    return [c for c in wanted if c in have]


def read_domain_rows(tables: Mapping[str, object], domain: str, entity_vectors: bool = False) -> dict[str, pa.Table]:
    """One domain's rows of the four tables a layout is built from (LanceDB, filtered);
    ``entity_vectors``: the entities with their ``vector`` column."""
    from lancedb.expr import col

    where = _domain_filter(domain)
    out = {}
    for name in _WANTED:
        table = tables[name]
        expr = where & col("kind").isin(list(_GRAPH_EDGES)) if name == T.EDGES else where
        out[name] = table.search().where(expr).select(_columns(table, name, entity_vectors)).to_arrow()
    return out


def read_tables_whole(tables: Mapping[str, object], entity_vectors: bool = False) -> dict[str, dict[str, pa.Table]]:
    """Every domain's rows of the four tables, each table read once: table -> domain -> rows
    (what :func:`read_domain_rows` returns for that domain)."""
    out = {}
    for name in _WANTED:
        table = tables[name]
        rows = table.to_arrow().select([*_columns(table, name, entity_vectors), "domain"])
        if name == T.EDGES:
            rows = rows.filter(pc.is_in(rows.column("kind"), value_set=pa.array(_GRAPH_EDGES)))
        out[name] = _split_by_domain(rows)
    return out


def _split_by_domain(rows: pa.Table) -> dict[str, pa.Table]:
    """``rows`` grouped by their ``domain`` column (dropped), each group a slice of one sorted copy."""
    rows = rows.filter(pc.is_valid(rows.column("domain")))
    if rows.num_rows == 0:
        return {}
    rows = rows.take(pc.sort_indices(rows.column("domain")))
    domains = rows.column("domain").to_numpy(zero_copy_only=False)
    rows = rows.drop_columns(["domain"])
    starts = np.flatnonzero(np.r_[True, domains[1:] != domains[:-1]])
    ends = np.r_[starts[1:], len(domains)]
    return {domains[a]: rows.slice(a, b - a) for a, b in zip(starts, ends)}


def stored_bytes(tables: Mapping[str, object]) -> int:
    """Bytes the four tables a layout is built from take in the store."""
    return sum(int(tables[name].stats()["total_bytes"]) for name in _WANTED)


def domain_row_reader(tables: Mapping[str, object], domains: list[str], entity_vectors: bool
                      ) -> Callable[[str], dict[str, pa.Table]]:
    """``domain -> its rows of the four tables`` for the layouts of ``domains``: small tables
    are read whole once (on the first call) and split by domain, large ones filtered per domain."""
    if len(domains) < WHOLE_READ_MIN_DOMAINS or stored_bytes(tables) > WHOLE_READ_BYTES:
        return lambda domain: read_domain_rows(tables, domain, entity_vectors)
    whole: dict[str, dict[str, pa.Table]] = {}

    def read(domain: str) -> dict[str, pa.Table]:
        if not whole:
            whole.update(read_tables_whole(tables, entity_vectors))
        return {name: by_domain.get(domain, _empty(tables[name], name, entity_vectors))
                for name, by_domain in whole.items()}
    return read


def _empty(table, name: str, entity_vectors: bool) -> pa.Table:
    schema = table.schema
    return pa.schema([schema.field(c) for c in _columns(table, name, entity_vectors)]).empty_table()


def read_entity_vectors(entities_table, domain: str) -> dict[str, np.ndarray]:
    """Entity id -> vector of one domain (the synonym edges' input)."""
    data = entities_table.search().where(_domain_filter(domain)).select(["entity_id", "vector"]).to_arrow()
    return _vectors_by_id(data)


def _read_ahead(domains: list[str], read: Callable[[str], object]) -> Iterator[tuple[str, object]]:
    """(domain, ``read(domain)``) in order, the next domain read on a thread while the caller
    works on this one: LanceDB reads release the GIL, so they overlap the layout's assembly
    and writes (at most two domains' rows in memory)."""
    if not domains:
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vdgr-layout-read") as pool:
        ahead = pool.submit(read, domains[0])
        for i, domain in enumerate(domains):
            got = [ahead.result()]
            ahead = pool.submit(read, domains[i + 1]) if i + 1 < len(domains) else None
            yield domain, got.pop()            # this frame keeps no reference to the rows


def publish_domain_layout(index_root: str, domain: str, rows: DomainRows, entity_vectors: Mapping[str, np.ndarray],
                          options: LayoutOptions, pending: PendingPublish) -> Optional[LayoutRef]:
    """Build the layout of ``domain`` from its normalized ``rows`` and entity vectors, write its
    vector blocks and folder (put in place by ``pending``); None for a domain without rows."""
    if rows.contents.num_rows == 0 and rows.directories.num_rows == 0:
        return None
    arrays, stores, meta, blocks = assemble(domain, rows, _aligned(rows, entity_vectors), options)
    del rows
    meta["vector_blocks"] = {}
    for kind, (row_vectors, assignment) in sorted(blocks.items()):
        done = write_blocks(index_root, domain, row_vectors, assignment, pending)
        meta["vector_blocks"][kind] = {"dim": int(row_vectors.shape[1]), "blocks": done.names}
        _log.debug("%s %s vectors: %d blocks written, %d kept", domain, kind, done.written, done.reused)
    del blocks
    ref = publish_layout(index_root, domain, arrays, stores, meta, pending)
    _log.debug("layout of %s: %s", domain, ref.folder)
    return ref


def layout_columns(name: str, schema: pa.Schema, options: LayoutOptions) -> pa.Schema:
    """The columns of table ``name`` (of ``schema``) a domain's layout is built from."""
    return pa.schema([schema.field(c) for c in _WANTED[name] + (
        ("vector",) if options.graph and name == T.ENTITIES else ()) if c in schema.names])


def layout_of_rows(index_root: str, domain: str, raw: Mapping[str, pa.Table],
                   options: LayoutOptions = LayoutOptions()) -> Optional[LayoutRef]:
    """Build and publish the layout of ``domain`` from its rows of the four tables (the columns
    :func:`layout_columns` names; any order; edges of every kind), as a build's worker has them."""
    edges = raw[T.EDGES]
    edges = edges.filter(pc.is_in(edges.column("kind"), value_set=pa.array(_GRAPH_EDGES)))
    rows = domain_rows(raw[T.CONTENTS], raw[T.DIRECTORIES], raw[T.ENTITIES], edges)
    vectors = _vectors_by_id(raw[T.ENTITIES]) if options.graph and rows.entities.num_rows else {}
    with PendingPublish() as pending:
        return publish_domain_layout(index_root, domain, rows, vectors, options, pending)


def _patched_vectors(vectors: dict[str, np.ndarray], delta: Optional[DomainDelta]) -> dict[str, np.ndarray]:
    """Entity vectors after ``delta``: its removed entities out, its added ones in."""
    if delta is None:
        return vectors
    out = {e: v for e, v in vectors.items() if e not in delta.entities_gone}
    out.update(_vectors_by_id(delta.entities))
    return out


def write_layouts(tables: Mapping[str, object], index_root: str, domains: Iterable[str],
                  options: LayoutOptions = LayoutOptions(), previous: Optional[Mapping[str, object]] = None,
                  deltas: Optional[Mapping[str, DomainDelta]] = None) -> dict[str, LayoutRef]:
    """Build and publish the layout of each domain in ``domains``, the rows read from ``tables``
    (what an update does in its driver); one domain's layout in memory at a time (and the next
    domain's rows, read meanwhile).

    Parameters
    ----------
    tables : mapping
        LanceDB tables by name (contents, directories, entities, edges): an update's, at the
        versions its previous manifest names.
    previous, deltas : mapping of domain, optional
        An update: a domain's change (``DomainDelta``) is applied to its rows, taken from its
        previous layout (``DomainLayout``) when it has one (only its entity vectors are read),
        else from ``tables``.
    """
    out: dict[str, LayoutRef] = {}
    previous, deltas = previous or {}, deltas or {}
    domains = sorted(set(domains))
    read = domain_row_reader(tables, [d for d in domains if d not in previous], options.graph)

    def rows_and_vectors(domain: str):
        delta = deltas.get(domain)
        if domain in previous:
            rows = rows_of_layout(previous[domain])
            vectors = read_entity_vectors(tables[T.ENTITIES], domain) if options.graph else {}
        else:
            raw = read(domain)
            rows = domain_rows(raw[T.CONTENTS], raw[T.DIRECTORIES], raw[T.ENTITIES], raw[T.EDGES])
            vectors = _vectors_by_id(raw[T.ENTITIES]) if options.graph else {}
        if delta is not None:
            rows = apply_delta(rows, delta)
        return rows, _patched_vectors(vectors, delta) if options.graph and rows.entities.num_rows else {}

    # every domain's files are made durable together, then put in place (store/pending.py)
    with PendingPublish() as pending:
        for domain, (rows, vectors) in _read_ahead(domains, rows_and_vectors):
            ref = publish_domain_layout(index_root, domain, rows, vectors, options, pending)
            del rows, vectors
            if ref is not None:
                out[domain] = ref
            release_unused_memory(collect=False)      # the next domain starts from this one's base
    failpoint("commit.layouts_published")
    return out


def layout_options(store) -> LayoutOptions:
    """The layout options of a ``StoreConfig``."""
    return LayoutOptions(graph=bool(store.graph_adjacency), synonym_min=float(store.graph_synonym_min))


__all__ = ["assemble", "build_layout", "layout_columns", "layout_of_rows", "publish_domain_layout", "write_layouts", "read_domain_rows", "read_tables_whole", "domain_row_reader",
           "read_entity_vectors", "synonym_edges",
           "LayoutOptions", "layout_options", "CONTENT_COLUMNS", "DIRECTORY_COLUMNS", "ENTITY_COLUMNS",
           "EDGE_COLUMNS"]
