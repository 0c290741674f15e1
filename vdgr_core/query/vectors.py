"""Dense search over the contents and directories tables, the scope pushed into the search.

Two paths behind one interface:

- **vector index** (a table of ``StoreConfig.vector_index_min_rows`` rows or more has one, named
  in the manifest): LanceDB's IVF search with the scope as a typed prefilter
  (:meth:`QueryScope.lance_expr`), ``QueryConfig.ann_nprobes`` partitions probed and the
  candidates re-ranked on full vectors (``ann_refine_factor``), so scores are exact cosines;
- **exact**, for a table without a vector index: its vectors are read once into memory (such a
  table is small by definition) and searched with one matrix-vector product per domain in
  scope; the scope is a mask applied before selection. A table without an index but above
  ``exact_max_rows`` rows is searched by LanceDB's flat scan with the prefilter instead.

Scores are cosine similarities (1 - LanceDB's cosine distance).
"""
from __future__ import annotations

import threading
from typing import Optional, Sequence

import numpy as np

from schemas import tables as T
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.view import IndexView, top_k

_ID = {T.CONTENTS: "chunk_id", T.DIRECTORIES: "node_id"}
_KIND = {T.CONTENTS: "content", T.DIRECTORIES: "dir"}


class _Exact:
    """A small table's vectors in memory, in the view's row order."""

    def __init__(self, view: IndexView, reader, table: str):
        kind = _KIND[table]
        n = len(view.contents) if kind == "content" else len(view.directories)
        rows_of = view.contents.rows_of if kind == "content" else view.directories.rows_of
        self.vectors = np.zeros((n, reader.dim), dtype=np.float32)
        data = reader.table(table).search().select([_ID[table], "domain", "vector"]).to_arrow()
        ids = data.column(_ID[table]).to_pylist()
        doms = data.column("domain").to_pylist()
        flat = data.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        vecs = np.asarray(flat, dtype=np.float32).reshape(len(ids), reader.dim) if ids else flat
        by_domain: dict[str, list[int]] = {}
        for i, d in enumerate(doms):
            by_domain.setdefault(d, []).append(i)
        for d, where in by_domain.items():
            rows = rows_of(d, [ids[i] for i in where])
            ok = rows >= 0
            self.vectors[rows[ok]] = vecs[np.asarray(where)[ok]]
        self._last: tuple = (None, {})

    def domain_sims(self, view: IndexView, kind: str, domain: str, q: np.ndarray) -> np.ndarray:
        """Cosine of ``q`` with every row of ``domain`` (local order); the last query vector's
        products (one for the whole table) are kept, since routing, the routes and the graph
        seeds all ask for them."""
        key = q.tobytes()
        last_key, sims = self._last
        if last_key != key:
            sims = {}
            self._last = (key, sims)
        full = sims.get("*")
        if full is None:
            full = sims["*"] = self.vectors @ q        # one product for every domain of the table
        i = view.code[domain]
        b = view.base(kind)
        return full[int(b[i]):int(b[i + 1])]


class VectorSearch:
    """Nearest contents or directories of a query vector within a scope.

    Parameters
    ----------
    view : IndexView
    config : QueryConfig
        ``ann_nprobes``, ``ann_refine_factor`` and ``exact_max_rows``.
    """

    def __init__(self, view: IndexView, config):
        self._view = view
        self._reader = view.reader
        self._config = config
        self._exact: dict[str, _Exact] = {}
        self._lock = threading.Lock()

    def indexed(self, table: str) -> bool:
        """True when ``table`` is searched through its LanceDB vector index."""
        return table in self._reader.manifest.vector_indexes

    def _exact_for(self, table: str) -> Optional[_Exact]:
        if self.indexed(table) or self._reader.manifest.counts.get(table, 0) > self._config.exact_max_rows:
            return None
        with self._lock:
            if table not in self._exact:
                self._exact[table] = _Exact(self._view, self._reader, table)
            return self._exact[table]

    def search(self, table: str, qvec: np.ndarray, scope: QueryScope, k: int) -> list[tuple[int, float]]:
        """The ``k`` rows of ``table`` nearest to ``qvec`` inside ``scope`` (its domains must be
        set), best first; ties broken by row."""
        domains = scope.search.domains or ()
        if k <= 0 or not domains:
            return []
        kind = _KIND[table]
        cols = self._view.contents if kind == "content" else self._view.directories
        mask = cols.mask(scope)
        exact = self._exact_for(table)
        q = np.asarray(qvec, dtype=np.float32)
        if exact is not None:
            rows_all, sims_all = [], []
            for d in domains:
                if d not in self._view.code:
                    continue
                local = np.flatnonzero(mask.local(d))
                rows_all.append(local + int(self._view.base(kind)[self._view.code[d]]))
                sims_all.append(exact.domain_sims(self._view, kind, d, q)[local])
            if not rows_all:
                return []
            return top_k(np.concatenate(sims_all), np.concatenate(rows_all), k)
        return self._lance(table, q, scope, k, mask)

    def _lance(self, table: str, q: np.ndarray, scope: QueryScope, k: int, mask) -> list[tuple[int, float]]:
        cfg = self._config
        kind = _KIND[table]
        cols = self._view.contents if kind == "content" else self._view.directories
        # twice k: rows of equal score (equal texts in two versions) are ordered by row, as
        # the exact path orders them, not by LanceDB's order; and directories' visibility
        # also asks whether a readable content lies below them (not a column of the table),
        # which is checked on the candidates
        fetch = 2 * k
        query = (self._reader.table(table).search(q).metric("cosine")
                 .where(scope.lance_expr(), prefilter=True).limit(fetch)
                 .select([_ID[table], "domain", "_distance"]))
        if self.indexed(table):
            query = query.nprobes(cfg.ann_nprobes).refine_factor(cfg.ann_refine_factor)
        else:
            query = query.bypass_vector_index()
        data = query.to_arrow()
        ids, doms = data.column(_ID[table]).to_pylist(), data.column("domain").to_pylist()
        dist = data.column("_distance").to_numpy(zero_copy_only=False)
        rows = np.full(len(ids), -1, dtype=np.int64)
        for d in set(doms):
            where = [i for i, x in enumerate(doms) if x == d]
            rows[where] = cols.rows_of(d, [ids[i] for i in where])
        ok = rows >= 0
        rows, sims = rows[ok], 1.0 - np.asarray(dist, dtype=np.float64)[ok]
        if kind == "dir" and len(rows):
            keep = mask[rows]
            rows, sims = rows[keep], sims[keep]
        return top_k(sims, rows, k)

    def similarity(self, table: str, qvec: np.ndarray, rows: Sequence[int]) -> np.ndarray:
        """Cosine of ``qvec`` with each of ``rows`` (vectors read for those rows only)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        q = np.asarray(qvec, dtype=np.float32)
        exact = self._exact_for(table)
        if exact is not None:
            return exact.vectors[rows] @ q
        from lancedb.expr import col

        kind = _KIND[table]
        cols = self._view.contents if kind == "content" else self._view.directories
        ids = [cols.ids[int(r)] for r in rows]
        data = (self._reader.table(table).search().where(col(_ID[table]).isin(sorted(set(ids))))
                .select([_ID[table], "vector"]).to_arrow())
        got = dict(zip(data.column(_ID[table]).to_pylist(),
                       np.asarray(data.column("vector").to_pylist(), dtype=np.float32)))
        return np.array([float(got[i] @ q) if i in got else 0.0 for i in ids], dtype=np.float32)

    def best_per_domain(self, table: str, qvec: np.ndarray, scope: QueryScope, domains: Sequence[str],
                        depth: int = 8) -> dict[str, float]:
        """Best cosine of ``qvec`` with each domain's visible rows (routing's directory signal).

        Exact path: every domain's best. Vector index: one search of ``depth`` rows per
        domain; a domain with no row among them gets the weakest score found (an upper
        bound of its best)."""
        if not domains:
            return {}
        scope = scope.with_domains(domains)
        exact = self._exact_for(table)
        if exact is not None:
            kind = _KIND[table]
            cols = self._view.contents if kind == "content" else self._view.directories
            mask = cols.mask(scope)
            q = np.asarray(qvec, dtype=np.float32)
            out = {}
            for d in domains:
                if d not in self._view.code:
                    out[d] = 0.0
                    continue
                visible = mask.local(d)
                out[d] = float(exact.domain_sims(self._view, kind, d, q)[visible].max()) if visible.any() else 0.0
            return out
        hits = self.search(table, qvec, scope, depth * len(domains))
        kind = _KIND[table]
        best: dict[str, float] = {}
        for row, s in hits:
            d = self._view.locate(kind, row)[0]
            best[d] = max(best.get(d, -1.0), s)
        floor = min((s for _, s in hits), default=0.0)
        return {d: best.get(d, floor) for d in domains}


__all__ = ["VectorSearch"]
