"""Dense search over the contents and directories tables, the scope pushed into the search.

Two paths behind one interface:

- **layout scan** (exact): each domain's layout holds its rows' vectors (``content_vectors``,
  ``dir_vectors``, memory-mapped; vdgr_core/store/domain_layout.py). A search whose domains
  hold at most ``AnnSettings.exact_max_rows`` rows, or one of a table without a vector index,
  takes one matrix-vector product per domain over those pages; the scope is a mask applied
  before selection. A query scoped to one domain of a 1M-chunk index reads that domain's
  vectors only (~50k rows: a few milliseconds), where the vector index's prefiltered search
  costs ~50 ms;
- **vector index**: a larger scope (routing over every domain, an unscoped question) of a
  table of ``StoreConfig.vector_index_min_rows`` rows or more goes to LanceDB's IVF search
  with the scope as a typed prefilter (:meth:`QueryScope.lance_expr`),
  ``QueryConfig.ann_nprobes`` partitions probed, an IVF_HNSW_SQ index's candidate list ``ann_ef`` (LanceDB's
  default when None) and the candidates re-ranked on full vectors (``ann_refine_factor``), so
  scores are exact cosines. A layout without vectors (written by
  an older version) is searched by LanceDB too, flat when the table has no index.

Scores are cosine similarities (1 - LanceDB's cosine distance).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from schemas import tables as T
from schemas.config import AnnSettings, slice_of
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.view import IndexView, top_k

_ID = {T.CONTENTS: "chunk_id", T.DIRECTORIES: "node_id"}
_KIND = {T.CONTENTS: "content", T.DIRECTORIES: "dir"}


class VectorSearch:
    """Nearest contents or directories of a query vector within a scope.

    Parameters
    ----------
    view : IndexView
    config : AnnSettings
        ``nprobes``, ``refine_factor``, ``ef`` and ``exact_max_rows`` (a ``QueryConfig`` is
        accepted and gives its slice).
    """

    def __init__(self, view: IndexView, config: AnnSettings):
        self._view = view
        self._reader = view.reader
        self._config = slice_of(config, AnnSettings)
        # the last query vector's products, per (kind, domain): routing, the routes and the
        # graph seeds all ask for the same vector (replaced whole, so threads never mix them)
        self._last: tuple = (None, {})

    def indexed(self, table: str) -> bool:
        """True when ``table`` has a LanceDB vector index (searched through it when a scope
        is too large to scan)."""
        return table in self._reader.manifest.vector_indexes

    def scans(self, table: str, domains: Sequence[str]) -> bool:
        """True when a search of ``table`` over ``domains`` scans their layouts' vectors
        exactly (every domain's layout holds vectors, and the table has no vector index or
        the domains hold at most ``exact_max_rows`` rows)."""
        kind = _KIND[table]
        known = [d for d in domains if d in self._view.code]
        for d in known:
            if self._view.count(kind, d) and self._view.layout(d).vectors(kind) is None:
                return False
        if not self.indexed(table):
            return True
        return sum(self._view.count(kind, d) for d in known) <= self._config.exact_max_rows

    def shortlist(self, table: str, ranked: Sequence[str]) -> list[str]:
        """The domains of ``ranked`` (best first) a search of ``table`` should cover so that it
        scans exactly: all of them when they fit (:meth:`scans`), else the longest prefix
        holding at most ``exact_max_rows`` rows (at least the first domain).

        Routing uses it as a cascade: its cheap signals rank the domains, and the dense signal
        is computed for the shortlist only, instead of a vector-index search over every
        domain's rows (at 1M chunks that search took ~330 ms and loaded the index into the
        query process)."""
        ranked = list(ranked)
        if self.scans(table, ranked):
            return ranked
        kind = _KIND[table]
        out, rows = [], 0
        for d in ranked:
            n = self._view.count(kind, d) if d in self._view.code else 0
            if out and rows + n > self._config.exact_max_rows:
                break
            out.append(d)
            rows += n
        return out

    def _domain_sims(self, kind: str, domain: str, q: np.ndarray) -> np.ndarray:
        """Cosine of ``q`` with every row of ``domain`` (local order)."""
        key = q.tobytes()
        last_key, sims = self._last
        if last_key != key:
            sims = {}
            self._last = (key, sims)
        got = sims.get((kind, domain))
        if got is None:
            vectors = self._view.layout(domain).vectors(kind)
            got = sims[(kind, domain)] = vectors @ q if vectors is not None else np.zeros(0, np.float32)
        return got

    def search(self, table: str, qvec: np.ndarray, scope: QueryScope, k: int) -> list[tuple[int, float]]:
        """The ``k`` rows of ``table`` nearest to ``qvec`` inside ``scope`` (its domains must be
        set), best first; ties broken by row."""
        domains = scope.search.domains or ()
        if k <= 0 or not domains:
            return []
        kind = _KIND[table]
        cols = self._view.contents if kind == "content" else self._view.directories
        mask = cols.mask(scope)
        q = np.asarray(qvec, dtype=np.float32)
        if not self.scans(table, domains):
            return self._lance(table, q, scope, k, mask)
        rows_all, sims_all = [], []
        for d in domains:
            if d not in self._view.code or not self._view.count(kind, d):
                continue
            local = np.flatnonzero(mask.local(d))
            rows_all.append(local + int(self._view.base(kind)[self._view.code[d]]))
            sims_all.append(self._domain_sims(kind, d, q)[local])
        if not rows_all:
            return []
        return top_k(np.concatenate(sims_all), np.concatenate(rows_all), k)

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
            query = query.nprobes(cfg.nprobes).refine_factor(cfg.refine_factor)
            if cfg.ef is not None:      # LanceDB refuses an ef below the rows it is asked for
                query = query.ef(max(cfg.ef, fetch * cfg.refine_factor))
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
        out = np.zeros(len(rows), dtype=np.float32)
        if len(rows) == 0:
            return out
        q = np.asarray(qvec, dtype=np.float32)
        kind = _KIND[table]
        missing = []
        for domain, where, local in self._view.split(kind, rows):
            vectors = self._view.layout(domain).vectors(kind)
            if vectors is None:
                missing.append(where)
                continue
            order = np.argsort(local, kind="stable")      # ascending pages of the memory map
            out[where[order]] = vectors[local[order]] @ q
        if missing:
            where = np.concatenate(missing)
            out[where] = self._lance_similarity(table, q, rows[where])
        return out

    def _lance_similarity(self, table: str, q: np.ndarray, rows: np.ndarray) -> np.ndarray:
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

        Layout scan: every domain's best. Vector index: one search of ``depth`` rows per
        domain; a domain with no row among them gets the weakest score found (an upper
        bound of its best)."""
        if not domains:
            return {}
        scope = scope.with_domains(domains)
        kind = _KIND[table]
        if self.scans(table, domains):
            cols = self._view.contents if kind == "content" else self._view.directories
            mask = cols.mask(scope)
            q = np.asarray(qvec, dtype=np.float32)
            out = {}
            for d in domains:
                if d not in self._view.code or not self._view.count(kind, d):
                    out[d] = 0.0
                    continue
                visible = mask.local(d)
                out[d] = float(self._domain_sims(kind, d, q)[visible].max()) if visible.any() else 0.0
            return out
        hits = self.search(table, qvec, scope, depth * len(domains))
        best: dict[str, float] = {}
        for row, s in hits:
            d = self._view.locate(kind, row)[0]
            best[d] = max(best.get(d, -1.0), s)
        floor = min((s for _, s in hits), default=0.0)
        return {d: best.get(d, floor) for d in domains}


__all__ = ["VectorSearch"]
