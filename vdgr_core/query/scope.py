"""Who may see which rows: a query's scope, checked on the rows a search asks about.

A :class:`QueryScope` is the caller's groups, the domains and versions to search and an
optional collection filter. Every search applies it before it selects anything: tantivy and
LanceDB receive it as a typed filter, and the layout-based routes (graph, TOC, backtracking)
ask a :class:`RowMask` about the rows they reach. A mask answers from three small lookup tables
per domain (is this ACL class readable, this version and this collection wanted), built once
per scope, so checking a row costs three array reads and no mask over the whole index exists.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Optional

import numpy as np

from vdgr_core.store.domain_layout import DomainLayout
from vdgr_core.store.filters import SearchScope

_CACHE = 64          # per-domain rule tables and domain masks kept (distinct scopes are few)


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

    def key(self) -> tuple:
        s = self.search
        return (tuple(sorted(set(s.groups))), s.domains, s.versions, self.collections)

    def lance_expr(self):
        """The LanceDB filter of this scope (access, domains, versions and collections)."""
        expr = self.search.lance_expr()
        if self.collections is not None:
            from lancedb.expr import col

            expr = expr & col("collection").isin(list(self.collections))
        return expr


def readable_classes(layout: DomainLayout, groups) -> np.ndarray:
    """For each ACL class of ``layout``: may ``groups`` read it (public classes: always)."""
    gs = set(groups)
    return np.array([not cls or bool(gs.intersection(cls)) for cls in layout.acl_classes], dtype=bool)


@dataclass(frozen=True)
class Rules:
    """One domain's lookup tables for one scope."""

    acl: np.ndarray          # per ACL class
    version: np.ndarray      # per version code
    collection: np.ndarray   # per collection code


def _rules(layout: DomainLayout, scope: QueryScope) -> Rules:
    s = scope.search
    version = np.ones(len(layout.versions), dtype=bool) if s.versions is None else \
        np.isin(np.array(layout.versions, dtype=object), list(s.versions))
    collection = np.ones(len(layout.collections), dtype=bool) if scope.collections is None else \
        np.isin(np.array(layout.collections, dtype=object), list(scope.collections))
    return Rules(readable_classes(layout, s.groups), version, collection)


class RowMask:
    """Which rows of one kind (``content`` or ``dir``) a scope lets the caller see.

    ``mask[row]`` (a global row of the view) or ``mask[rows]`` (an array) answer for the rows
    asked about; ``mask.local(domain)`` is the whole domain's boolean array in local order
    (computed once per domain and scope). A directory is visible only when its own ACL allows
    it *and* a content the caller may read lies at or below it (a public folder holding only
    restricted documents would name what it holds).
    """

    def __init__(self, view, kind: str, scope: QueryScope):
        self._view = view
        self._kind = kind
        self.scope = scope
        self._domains = None if scope.search.domains is None else frozenset(scope.search.domains)
        self._rules: dict[str, Optional[Rules]] = {}
        self._local: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def rules(self, domain: str) -> Optional[Rules]:
        """The lookup tables of ``domain`` (None: the domain is outside the scope)."""
        if domain not in self._rules:
            ok = self._domains is None or domain in self._domains
            self._rules[domain] = _rules(self._view.layout(domain), self.scope) if ok else None
        return self._rules[domain]

    def allowed(self, domain: str, local) -> np.ndarray:
        """Visibility of ``local`` rows (array) of ``domain``."""
        local = np.asarray(local, dtype=np.int64)
        r = self.rules(domain)
        if r is None or len(local) == 0:
            return np.zeros(len(local), dtype=bool)
        lay = self._view.layout(domain)
        k = self._kind
        ok = r.acl[lay.array(f"{k}_acl")[local]]
        ok &= r.version[lay.array(f"{k}_version")[local]]
        ok &= r.collection[lay.array(f"{k}_collection")[local]]
        if k == "dir" and ok.any():
            ok &= self._view.readable_below(domain, local, r.acl)
        return ok

    def local(self, domain: str) -> np.ndarray:
        """The whole domain's visibility in local order (read-only, cached)."""
        m = self._local.get(domain)
        if m is None:
            n = self._view.count(self._kind, domain)
            m = self.allowed(domain, np.arange(n))
            m.setflags(write=False)
            with self._lock:
                self._local[domain] = m
        return m

    def __getitem__(self, rows):
        if np.ndim(rows) == 0:
            d, local = self._view.locate(self._kind, int(rows))
            return bool(self.allowed(d, [local])[0])
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=bool)
        for d, where, local in self._view.split(self._kind, rows):
            out[where] = self.allowed(d, local)
        return out


__all__ = ["QueryScope", "RowMask", "Rules", "readable_classes"]
