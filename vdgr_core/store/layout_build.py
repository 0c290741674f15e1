"""Build a domain's query layout (vdgr_core/store/domain_layout.py) from its rows.

``build_layout`` is a plain function of four Arrow tables (one domain's contents, directories,
entities and edges); ``write_layouts`` reads them from LanceDB one domain at a time (a filter on
``domain``, answered by its bitmap index once a table is large), so the driver holds one
domain's rows, never a whole table. A build writes every domain; an update only the domains it
changed.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

import numpy as np
import pyarrow as pa
from scipy import sparse

from schemas import tables as T
from vdgr_core.labels import label_key, label_stems
from vdgr_core.store.domain_layout import LayoutRef, publish_layout
from vdgr_core.store.failpoints import failpoint

_log = logging.getLogger("vdgr.store")

CONTENT_COLUMNS = ("chunk_id", "source", "parent_id", "position", "version", "collection", "acl", "text",
                   "title", "path", "page", "flags")
DIRECTORY_COLUMNS = ("node_id", "parent_id", "version", "collection", "acl", "full_path", "title", "summary",
                     "kind", "level")
ENTITY_COLUMNS = ("entity_id", "name", "norm", "vector")
EDGE_COLUMNS = ("kind", "src", "dst", "weight")

SYNONYMS_PER_ENTITY = 5     # strongest synonym edges kept per entity
_BLOCK = 2048               # entity rows per similarity block

_STR_LIST = pa.list_(pa.string())
CONTENT_STORE = pa.schema([("text", pa.string()), ("title", pa.string()), ("source", pa.string()),
                           ("path", _STR_LIST), ("parent_id", pa.string()), ("page", pa.int32()),
                           ("flags", _STR_LIST), ("version", pa.string()), ("collection", pa.string())])
DIRECTORY_STORE = pa.schema([("title", pa.string()), ("full_path", _STR_LIST), ("summary", pa.string()),
                             ("kind", pa.string()), ("level", pa.int32())])
ENTITY_STORE = pa.schema([("name", pa.string()), ("norm", pa.string())])


@dataclass(frozen=True)
class LayoutOptions:
    """What a layout holds besides the rows: the entity graph and its synonym edges."""

    graph: bool = True
    synonym_min: float = 0.9      # synonym edges stored from this cosine (a query may ask for more)


def _col(table: pa.Table, name: str, default=None) -> list:
    if name in table.column_names:
        return table.column(name).to_pylist()
    return [default] * table.num_rows


def _ids(values: list) -> np.ndarray:
    return np.array([v.encode("ascii") for v in values], dtype="S32") if values else np.zeros(0, dtype="S32")


def _lookup(sorted_ids: np.ndarray, values: list) -> np.ndarray:
    """Local number of each id in ``sorted_ids`` (``-1`` when absent or empty)."""
    out = np.full(len(values), -1, dtype=np.int32)
    if len(sorted_ids) == 0 or not values:
        return out
    keys = np.array([(v or "").encode("ascii", "replace")[:32] for v in values], dtype="S32")
    pos = np.minimum(np.searchsorted(sorted_ids, keys), len(sorted_ids) - 1)
    hit = sorted_ids[pos] == keys
    out[hit] = pos[hit]
    return out


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(pointers, indices) of pairs (row, col), each row's columns sorted."""
    order = np.lexsort((cols, rows))
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=ptr[1:])
    return ptr, cols[order].astype(np.int32)


def _index_dtype(nnz: int):
    return np.int32 if nnz < 2 ** 31 - 1 else np.int64


def _codes(values: list, vocabulary: list) -> np.ndarray:
    lookup = {v: i for i, v in enumerate(vocabulary)}
    return np.array([lookup[v] for v in values], dtype=np.int32)


def _acl_class(acl) -> tuple[str, ...]:
    return tuple(sorted(set(acl or ())))


def _below_classes(nd: int, parent: np.ndarray, own: dict[int, set]) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the ACL classes at or below each directory (``own``: classes of its direct contents)."""
    depth = np.zeros(nd, dtype=np.int64)
    for j in range(nd):
        d, p, seen = 0, int(parent[j]), 0
        while p >= 0 and seen < nd:
            d, p, seen = d + 1, int(parent[p]), seen + 1
        depth[j] = d
    below: dict[int, set] = defaultdict(set)
    for j, classes in own.items():
        below[j] |= classes
    for j in sorted(range(nd), key=lambda x: -depth[x]):        # children before their parents
        p = int(parent[j])
        if p >= 0 and below.get(j):
            below[p] |= below[j]
    rows, cols = [], []
    for j in sorted(below):
        for c in sorted(below[j]):
            rows.append(j)
            cols.append(c)
    return _csr(np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), nd)


def _labels(full_paths: list, summaries: list) -> dict[str, np.ndarray]:
    keys, dirs, tfs = [], [], []
    lengths = np.zeros(len(full_paths), dtype=np.float32)
    for j, (path, summary) in enumerate(zip(full_paths, summaries)):
        stems = label_stems(path or (), summary)
        lengths[j] = len(stems)
        counts: dict[int, int] = {}
        for s in stems:
            k = label_key(s)
            counts[k] = counts.get(k, 0) + 1
        for k, n in counts.items():
            keys.append(k)
            dirs.append(j)
            tfs.append(n)
    keys_a = np.array(keys, dtype=np.uint64)
    dirs_a = np.array(dirs, dtype=np.int32)
    tfs_a = np.array(tfs, dtype=np.float32)
    order = np.lexsort((dirs_a, keys_a))
    keys_a, dirs_a, tfs_a = keys_a[order], dirs_a[order], tfs_a[order]
    uniq, first = np.unique(keys_a, return_index=True)
    ptr = np.append(first, len(keys_a)).astype(np.int64)
    return {"label_keys": uniq.astype(np.uint64), "label_ptr": ptr, "label_dirs": dirs_a, "label_tf": tfs_a,
            "label_len": lengths}


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


def _graph(contents_ids: np.ndarray, entity_ids: np.ndarray, edges: pa.Table) -> sparse.csr_matrix:
    nc, ne = len(contents_ids), len(entity_ids)
    n = nc + ne
    if edges.num_rows == 0 or n == 0:
        return sparse.csr_matrix((n, n), dtype=np.float64)
    kind = np.array(_col(edges, "kind"), dtype=object)
    src, dst = _col(edges, "src"), _col(edges, "dst")
    w = np.asarray(edges.column("weight").to_numpy(zero_copy_only=False), dtype=np.float64)
    w = np.where(w == 0, 1.0, w)
    has = kind == T.HAS_ENTITY
    co = kind == T.COOCCURS
    a_content = _lookup(contents_ids, src).astype(np.int64)
    a_entity = _lookup(entity_ids, src).astype(np.int64)
    b = _lookup(entity_ids, dst).astype(np.int64)
    a = np.where(has, a_content, np.where(a_entity >= 0, a_entity + nc, -1))
    ok = (has | co) & (a >= 0) & (b >= 0)
    a, b, w = a[ok], b[ok] + nc, w[ok]
    keep = a != b
    a, b, w = a[keep], b[keep], w[keep]
    m = sparse.csr_matrix((np.concatenate([w, w]), (np.concatenate([a, b]), np.concatenate([b, a]))),
                          shape=(n, n), dtype=np.float64)
    m.sum_duplicates()
    m.sort_indices()
    return m


def build_layout(domain: str, contents: pa.Table, directories: pa.Table, entities: pa.Table, edges: pa.Table,
                 options: LayoutOptions = LayoutOptions()) -> tuple[dict, dict, dict]:
    """The arrays, document stores and meta of ``domain``'s layout (see domain_layout.py).

    Parameters
    ----------
    contents, directories, entities, edges : pyarrow.Table
        The domain's rows (at least the ``*_COLUMNS`` of this module; other domains' rows must
        already be filtered out). Row order does not matter: everything is sorted by id.
    """
    # ---- contents, sorted by chunk id
    cid = _col(contents, "chunk_id")
    corder = sorted(range(len(cid)), key=cid.__getitem__)
    contents = contents.take(pa.array(corder, pa.int64())) if corder else contents
    cid = [cid[i] for i in corder]
    content_ids = _ids(cid)
    nc = len(cid)
    did = _col(directories, "node_id")
    dorder = sorted(range(len(did)), key=did.__getitem__)
    directories = directories.take(pa.array(dorder, pa.int64())) if dorder else directories
    did = [did[i] for i in dorder]
    dir_ids = _ids(did)
    nd = len(did)

    c_acl = [_acl_class(a) for a in _col(contents, "acl")]
    d_acl = [_acl_class(a) for a in _col(directories, "acl")]
    classes = sorted(set(c_acl) | set(d_acl) | {()})
    c_ver, d_ver = [v or "" for v in _col(contents, "version")], [v or "" for v in _col(directories, "version")]
    c_col, d_col = [v or "" for v in _col(contents, "collection")], [v or "" for v in _col(directories, "collection")]
    versions = sorted(set(c_ver) | set(d_ver) | {""})
    collections = sorted(set(c_col) | set(d_col) | {""})

    # ---- sections: (source, parent node) groups in reading order
    sources = [s or "" for s in _col(contents, "source")]
    parents = _col(contents, "parent_id")
    keys = np.array([f"{s}\0{p or i}" for s, p, i in zip(sources, parents, cid)], dtype=str)
    if nc:
        skeys, section_of = np.unique(keys, return_inverse=True)
    else:
        skeys, section_of = np.zeros(0, dtype=str), np.zeros(0, dtype=np.int64)
    ns = len(skeys)
    position = np.array([p or 0 for p in _col(contents, "position", 0)], dtype=np.int64)
    order = np.lexsort((np.arange(nc), position, section_of)) if nc else np.zeros(0, dtype=np.int64)
    section_ptr = np.zeros(ns + 1, dtype=np.int64)
    np.cumsum(np.bincount(section_of, minlength=ns), out=section_ptr[1:])
    section_rows = order.astype(np.int32)
    doc_names = sorted(set(sources))
    doc_code = {s: i for i, s in enumerate(doc_names)}
    first_rows = section_rows[section_ptr[:-1]] if ns else np.zeros(0, dtype=np.int32)
    section_doc = np.array([doc_code[sources[r]] for r in first_rows], dtype=np.int32)
    content_dir = _lookup(dir_ids, parents)
    section_dir = content_dir[first_rows] if ns else np.zeros(0, dtype=np.int32)

    # ---- directories: tree, contents, classes below, labels
    dir_parent = _lookup(dir_ids, _col(directories, "parent_id"))
    child = np.flatnonzero(dir_parent >= 0)
    children_ptr, children_idx = _csr(dir_parent[child].astype(np.int64), child.astype(np.int64), nd)
    placed = np.flatnonzero(content_dir >= 0)
    contents_ptr, contents_idx = _csr(content_dir[placed].astype(np.int64), placed.astype(np.int64), nd)
    class_code = {c: i for i, c in enumerate(classes)}
    c_acl_code = np.array([class_code[a] for a in c_acl], dtype=np.int32)
    own: dict[int, set] = defaultdict(set)
    for r in placed:
        own[int(content_dir[r])].add(int(c_acl_code[r]))
    below_ptr, below_idx = _below_classes(nd, dir_parent, own)

    arrays = {
        "content_ids": content_ids, "content_section": section_of.astype(np.int32),
        "content_dir": content_dir, "content_acl": c_acl_code,
        "content_version": _codes(c_ver, versions), "content_collection": _codes(c_col, collections),
        "section_ptr": section_ptr, "section_rows": section_rows, "section_doc": section_doc,
        "section_dir": section_dir.astype(np.int32),
        "dir_ids": dir_ids, "dir_parent": dir_parent,
        "dir_acl": np.array([class_code[a] for a in d_acl], dtype=np.int32),
        "dir_version": _codes(d_ver, versions), "dir_collection": _codes(d_col, collections),
        "dir_children_ptr": children_ptr, "dir_children_idx": children_idx,
        "dir_contents_ptr": contents_ptr, "dir_contents_idx": contents_idx,
        "dir_below_ptr": below_ptr, "dir_below_idx": below_idx,
        **_labels(_col(directories, "full_path"), _col(directories, "summary")),
    }

    # ---- entities and the graph
    eid = _col(entities, "entity_id")
    eorder = sorted(range(len(eid)), key=eid.__getitem__)
    entities = entities.take(pa.array(eorder, pa.int64())) if eorder else entities
    entity_ids = _ids([eid[i] for i in eorder])
    ne = len(entity_ids)
    graph = _graph(content_ids, entity_ids, edges) if options.graph else sparse.csr_matrix((nc + ne, nc + ne))
    idx_dtype = _index_dtype(graph.nnz)
    vectors = _col(entities, "vector")
    dim = next((len(v) for v in vectors if v is not None), 0)
    vec = np.array([v if v is not None else [0.0] * dim for v in vectors], dtype=np.float32).reshape(ne, dim)
    syn = synonym_edges(vec, options.synonym_min) if options.graph else sparse.csr_matrix((ne, ne))
    arrays.update({
        "entity_ids": entity_ids,
        "graph_ptr": graph.indptr.astype(idx_dtype), "graph_idx": graph.indices.astype(idx_dtype),
        "graph_w": graph.data.astype(np.float32),
        "synonym_ptr": syn.indptr.astype(np.int32), "synonym_idx": syn.indices.astype(np.int32),
        "synonym_w": syn.data.astype(np.float32),
    })

    stores = {
        "contents": pa.table({
            "text": pa.array(_col(contents, "text"), pa.string()),
            "title": pa.array(_col(contents, "title"), pa.string()),
            "source": pa.array(sources, pa.string()),
            "path": pa.array([list(p or ()) for p in _col(contents, "path")], _STR_LIST),
            "parent_id": pa.array(parents, pa.string()),
            "page": pa.array(_col(contents, "page"), pa.int32()),
            "flags": pa.array([list(f or ()) for f in _col(contents, "flags")], _STR_LIST),
            "version": pa.array(c_ver, pa.string()), "collection": pa.array(c_col, pa.string()),
        }, schema=CONTENT_STORE),
        "directories": pa.table({
            "title": pa.array(_col(directories, "title"), pa.string()),
            "full_path": pa.array([list(p or ()) for p in _col(directories, "full_path")], _STR_LIST),
            "summary": pa.array([s or "" for s in _col(directories, "summary")], pa.string()),
            "kind": pa.array(_col(directories, "kind"), pa.string()),
            "level": pa.array(_col(directories, "level", 0), pa.int32()),
        }, schema=DIRECTORY_STORE),
        "entities": pa.table({
            "name": pa.array(_col(entities, "name"), pa.string()),
            "norm": pa.array(_col(entities, "norm"), pa.string()),
        }, schema=ENTITY_STORE),
    }
    visible = sorted({(int(a), int(c), int(v)) for a, c, v in
                      zip(c_acl_code, arrays["content_collection"], arrays["content_version"])})
    meta = {
        "counts": {"contents": nc, "sections": ns, "directories": nd, "entities": ne, "documents": len(doc_names)},
        "acl_classes": [list(c) for c in classes], "versions": versions, "collections": collections,
        "visible": [list(v) for v in visible], "graph": bool(options.graph),
        "synonym_min": float(options.synonym_min), "synonyms_per_entity": SYNONYMS_PER_ENTITY,
    }
    return arrays, stores, meta


def read_domain_rows(tables: Mapping[str, object], domain: str) -> dict[str, pa.Table]:
    """One domain's rows of the four tables a layout is built from (LanceDB, filtered)."""
    from lancedb.expr import col

    where = col("domain").isin([domain])
    wanted = {T.CONTENTS: CONTENT_COLUMNS, T.DIRECTORIES: DIRECTORY_COLUMNS, T.ENTITIES: ENTITY_COLUMNS,
              T.EDGES: EDGE_COLUMNS}
    out = {}
    for name, columns in wanted.items():
        table = tables[name]
        have = set(table.schema.names)
        cols = [c for c in columns if c in have]
        expr = where & col("kind").isin([T.HAS_ENTITY, T.COOCCURS]) if name == T.EDGES else where
        out[name] = table.search().where(expr).select(cols).to_arrow()
    return out


def write_layouts(tables: Mapping[str, object], index_root: str, domains: Iterable[str],
                  options: LayoutOptions = LayoutOptions()) -> dict[str, LayoutRef]:
    """Build and publish the layout of each domain in ``domains`` from ``tables`` (LanceDB
    tables by name, at the versions being committed); one domain's rows in memory at a time."""
    out: dict[str, LayoutRef] = {}
    for domain in sorted(set(domains)):
        rows = read_domain_rows(tables, domain)
        if rows[T.CONTENTS].num_rows == 0 and rows[T.DIRECTORIES].num_rows == 0:
            continue
        arrays, stores, meta = build_layout(domain, rows[T.CONTENTS], rows[T.DIRECTORIES], rows[T.ENTITIES],
                                            rows[T.EDGES], options)
        out[domain] = publish_layout(index_root, domain, arrays, stores, meta)
        _log.debug("layout of %s: %s", domain, out[domain].folder)
    failpoint("commit.layouts_published")
    return out


def layout_options(store) -> LayoutOptions:
    """The layout options of a ``StoreConfig``."""
    return LayoutOptions(graph=bool(store.graph_adjacency), synonym_min=float(store.graph_synonym_min))


__all__ = ["build_layout", "write_layouts", "read_domain_rows", "synonym_edges", "LayoutOptions", "layout_options",
           "CONTENT_COLUMNS", "DIRECTORY_COLUMNS", "ENTITY_COLUMNS", "EDGE_COLUMNS"]
