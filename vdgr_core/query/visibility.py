"""What a caller may know exists: the domains, collections and versions that hold rows they can read.

Routing, confidences, the trace and LLM prompts consider only these, so a domain (or collection,
or version) whose every row is restricted to other groups is invisible: it is not scored, named,
described or offered to the LLM router. Computed from the content rows' ACLs once per set of
groups and cached (a few distinct group sets per process).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from vdgr_core.query.data import Contents

_CACHE = 256


@dataclass(frozen=True)
class Visible:
    """Domains a caller can read something in, with their readable collections and versions."""

    collections: dict[str, tuple[str, ...]]
    versions: dict[str, tuple[str, ...]]

    @property
    def domains(self) -> frozenset[str]:
        return frozenset(self.collections)

    def has(self, domain: str) -> bool:
        return domain in self.collections


class VisibilityIndex:
    """:class:`Visible` per set of groups, from the content rows (cached, thread-safe)."""

    def __init__(self, contents: Contents):
        self._contents = contents
        self._cache: dict[tuple[str, ...], Visible] = {}
        self._lock = threading.Lock()

    def for_groups(self, groups) -> Visible:
        key = tuple(sorted(set(groups)))
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        c = self._contents
        rows = np.flatnonzero(c.visible(key))
        colls: dict[str, set[str]] = {}
        vers: dict[str, set[str]] = {}
        for d, coll, ver in zip(c.domain[rows], c.collection[rows], c.version[rows]):
            d = str(d)
            colls.setdefault(d, set())
            vers.setdefault(d, set())
            if coll:
                colls[d].add(str(coll))
            if ver:
                vers[d].add(str(ver))
        out = Visible({d: tuple(sorted(v)) for d, v in colls.items()},
                      {d: tuple(sorted(v)) for d, v in vers.items()})
        with self._lock:
            if len(self._cache) >= _CACHE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = out
        return out
