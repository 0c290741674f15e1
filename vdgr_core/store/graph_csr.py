"""Per-domain graph adjacency as CSR arrays in ``.npy`` files, for the query side's graph route.

One folder per domain, ``graph/<domain>/<digest>/``, named by the manifest (``graphs``):

=====================  ==========================================================================
``content_ids.npy``    ``S32`` ids of the domain's contents, sorted: local nodes ``0 .. nc-1``
``entity_ids.npy``     ``S32`` ids of the domain's entities, sorted: local nodes ``nc .. nc+ne-1``
``indptr.npy``         ``int64``, ``nc + ne + 1``: CSR row pointers
``indices.npy``        ``int32``: CSR column (local node) of each stored weight
``weights.npy``        ``float32``: symmetric weights
``meta.json``          ``{"format": 1, "n_contents", "n_entities", "nnz", "edges": ...}``
=====================  ==========================================================================

The matrix is symmetric: every ``has_entity`` edge (content -> entity, weight = mentions) and
every ``cooccurs`` edge (entity <-> entity, weight = sentences) is stored in both directions,
weights of equal pairs summed, self loops dropped, a zero weight counted as 1 (what
``vdgr_core.query.graph_route.build_domain_graph`` builds in memory). Rows are sorted, so a
local node of an id is ``np.searchsorted(ids, id)``; arrays open with ``np.load(...,
mmap_mode="r")``. The folder is named by a digest of the arrays and published whole.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import Iterable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import sparse

from schemas import tables as T
from vdgr_core.store.location import IndexLocation

FORMAT = 1
FILES = ("content_ids.npy", "entity_ids.npy", "indptr.npy", "indices.npy", "weights.npy", "meta.json")


class _Ids:
    """Ids of one node kind: global sorted array, and each id's domain and local number."""

    def __init__(self, domains: np.ndarray, ids: np.ndarray, domain_codes: dict[str, int]):
        order = np.argsort(ids, kind="stable")
        self.ids = ids[order]
        self.domain = np.array([domain_codes[d] for d in domains], dtype=np.int32)[order] if len(ids) else \
            np.zeros(0, dtype=np.int32)
        # local number = rank within its domain in sorted id order
        self.local = np.zeros(len(self.ids), dtype=np.int64)
        self.count = np.zeros(len(domain_codes), dtype=np.int64)
        for code in np.unique(self.domain):
            where = np.flatnonzero(self.domain == code)
            self.local[where] = np.arange(len(where))
            self.count[code] = len(where)

    def lookup(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``self.ids``, found) for each id."""
        if len(self.ids) == 0:
            return np.zeros(len(ids), dtype=np.int64), np.zeros(len(ids), dtype=bool)
        pos = np.searchsorted(self.ids, ids)
        pos = np.minimum(pos, len(self.ids) - 1)
        return pos, self.ids[pos] == ids

    def of_domain(self, code: int) -> np.ndarray:
        return self.ids[self.domain == code]


def _bytes_ids(column) -> np.ndarray:
    values = column.to_pylist() if not isinstance(column, list) else column
    return np.array([v.encode("ascii") for v in values], dtype="S32") if values else np.zeros(0, dtype="S32")


class GraphBuilder:
    """Collects the nodes and the has_entity / cooccurs edges of some domains, then writes one
    CSR folder per domain. Feed it Arrow batches: memory is a few integers per edge.

    Parameters
    ----------
    domains:
        The domains to build (edges and nodes of other domains are ignored).
    """

    def __init__(self, domains: Iterable[str]):
        self.domains = sorted(set(domains))
        self._codes = {d: i for i, d in enumerate(self.domains)}
        self._nodes: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {"contents": [], "entities": []}
        self._coo_parts: list[tuple[np.ndarray, ...]] = []
        self._ids: dict[str, _Ids] = {}

    def _known(self, batch, column: str = "domain"):
        return pc.is_in(batch.column(column), value_set=pa.array(self.domains, pa.string()))

    def add_contents(self, batch) -> None:
        """A batch with ``chunk_id`` and ``domain``."""
        batch = batch.filter(self._known(batch))
        self._nodes["contents"].append((np.array(batch.column("domain").to_pylist(), dtype=object),
                                        _bytes_ids(batch.column("chunk_id"))))

    def add_entities(self, batch) -> None:
        """A batch with ``entity_id`` and ``domain``."""
        batch = batch.filter(self._known(batch))
        self._nodes["entities"].append((np.array(batch.column("domain").to_pylist(), dtype=object),
                                        _bytes_ids(batch.column("entity_id"))))

    def add_edges(self, batch) -> None:
        """A batch of edges rows (``kind``, ``src``, ``dst``, ``domain``, ``weight``); give every
        node first. Kept as four small integer / float arrays per edge."""
        keep = pc.and_(self._known(batch), pc.is_in(batch.column("kind"),
                                                     value_set=pa.array([T.HAS_ENTITY, T.COOCCURS])))
        batch = batch.filter(keep).select(["kind", "src", "dst", "domain", "weight"])
        if batch.num_rows:
            self._coo_parts.append(self._local_edges(batch))

    def _node_ids(self, kind: str) -> _Ids:
        if kind not in self._ids:
            parts = self._nodes[kind]
            doms = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=object)
            ids = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype="S32")
            self._ids[kind] = _Ids(doms, ids, self._codes)
            self._nodes[kind] = []
        return self._ids[kind]

    def _local_edges(self, batch):
        """(domain code, a, b, weight) of a batch of edges, in local node numbers."""
        contents, entities = self._node_ids("contents"), self._node_ids("entities")
        kind = np.array(batch.column("kind").to_pylist(), dtype=object)
        src, dst = _bytes_ids(batch.column("src")), _bytes_ids(batch.column("dst"))
        dom = np.array([self._codes[d] for d in batch.column("domain").to_pylist()], dtype=np.int32)
        w = batch.column("weight").to_numpy(zero_copy_only=False).astype(np.float64)
        w[w == 0] = 1.0
        has = kind == T.HAS_ENTITY
        a = np.zeros(len(src), dtype=np.int64)
        ok = np.zeros(len(src), dtype=bool)
        pos, found = contents.lookup(src)
        a[has] = contents.local[pos][has]
        ok[has] = (found & (contents.domain[pos] == dom))[has]
        pos, found = entities.lookup(src)
        nc = contents.count[dom]
        a[~has] = (entities.local[pos] + nc)[~has]
        ok[~has] = (found & (entities.domain[pos] == dom))[~has]
        pos, found = entities.lookup(dst)
        b = entities.local[pos] + nc
        ok &= found & (entities.domain[pos] == dom) & (a != b)
        return dom[ok], a[ok].astype(np.int32), b[ok].astype(np.int32), w[ok].astype(np.float32)

    def _coo(self):
        """(domain code, a, b, weight) of every edge given."""
        parts, self._coo_parts = self._coo_parts, []
        if not parts:
            return (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.float32))
        return tuple(np.concatenate(x) for x in zip(*parts))

    def write(self, index_root: str) -> dict[str, str]:
        """Write one folder per domain that has nodes; returns domain -> folder (relative)."""
        dom, a, b, w = self._coo()
        contents, entities = self._node_ids("contents"), self._node_ids("entities")
        loc = IndexLocation(index_root)
        out = {}
        for code, domain in enumerate(self.domains):
            cids, eids = contents.of_domain(code), entities.of_domain(code)
            n = len(cids) + len(eids)
            if n == 0:
                continue
            sel = dom == code
            rows = np.concatenate([a[sel], b[sel]])
            cols = np.concatenate([b[sel], a[sel]])
            vals = np.concatenate([w[sel], w[sel]]).astype(np.float64)
            m = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n), dtype=np.float64)
            m.sum_duplicates()
            m.sort_indices()
            arrays = {
                "content_ids.npy": cids, "entity_ids.npy": eids,
                "indptr.npy": m.indptr.astype(np.int64), "indices.npy": m.indices.astype(np.int32),
                "weights.npy": m.data.astype(np.float32),
            }
            out[domain] = _publish(loc, domain, arrays)
        return out


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _publish(loc: IndexLocation, domain: str, arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256(f"graph {FORMAT}\x1f{domain}".encode("utf-8"))
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        h.update(name.encode("utf-8") + str(arr.dtype).encode("ascii") + str(arr.shape).encode("ascii"))
        h.update(arr.tobytes())
    rel = f"graph/{_safe(domain)}/{h.hexdigest()[:24]}"
    if loc.exists(rel):
        return rel
    meta = {"format": FORMAT, "domain": domain, "n_contents": int(len(arrays["content_ids.npy"])),
            "n_entities": int(len(arrays["entity_ids.npy"])), "nnz": int(len(arrays["weights.npy"])),
            "edges": "has_entity (mentions) + cooccurs (sentences), symmetric, zero weight = 1"}
    if loc.remote:
        tmp = tempfile.mkdtemp(prefix="vdgr-graph-")
    else:
        parent = os.path.dirname(loc.local_folder(rel))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".building-", dir=parent)
    try:
        for name, arr in arrays.items():
            np.save(os.path.join(tmp, name), arr, allow_pickle=False)
        with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as f:
            json.dump(meta, f, sort_keys=True)
        loc.publish_folder(tmp, rel)
    except BaseException:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return rel


def load_graph(folder: str, mmap: bool = True) -> tuple[np.ndarray, np.ndarray, sparse.csr_matrix]:
    """(content ids, entity ids, symmetric CSR matrix) of a graph folder (memory-mapped)."""
    mode: Optional[str] = "r" if mmap else None
    load = lambda name: np.load(os.path.join(folder, name), mmap_mode=mode, allow_pickle=False)  # noqa: E731
    cids, eids = load("content_ids.npy"), load("entity_ids.npy")
    n = len(cids) + len(eids)
    m = sparse.csr_matrix((load("weights.npy"), load("indices.npy"), load("indptr.npy")), shape=(n, n))
    return cids, eids, m


__all__ = ["GraphBuilder", "load_graph", "FILES", "FORMAT"]
