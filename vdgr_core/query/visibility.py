"""What a caller may know exists: the domains, collections and versions that hold rows they can read.

Routing, confidences, the trace and LLM prompts consider only these, so a domain (or collection,
or version) whose every row is restricted to other groups is invisible: it is not scored, named,
described or offered to the LLM router. Each domain's layout lists the (ACL class, collection,
version) combinations its contents hold (``meta.visible``), so a caller's view is computed from
those few combinations, once per set of groups, and cached.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from vdgr_core.query.scope import readable_classes
from vdgr_core.query.view import IndexView

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
    """:class:`Visible` per set of groups, from the layouts (cached, thread-safe)."""

    def __init__(self, view: IndexView):
        self._view = view
        self._cache: dict[tuple[str, ...], Visible] = {}
        self._lock = threading.Lock()

    def for_groups(self, groups) -> Visible:
        key = tuple(sorted(set(groups)))
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None:
            return hit
        colls: dict[str, tuple[str, ...]] = {}
        vers: dict[str, tuple[str, ...]] = {}
        for d in self._view.domains:
            lay = self._view.layout(d)
            readable = readable_classes(lay, key)
            combos = [(c, v) for a, c, v in lay.meta.get("visible", ()) if readable[a]]
            if not combos:
                continue
            colls[d] = tuple(sorted({lay.collections[c] for c, _ in combos} - {""}))
            vers[d] = tuple(sorted({lay.versions[v] for _, v in combos} - {""}))
        out = Visible(colls, vers)
        with self._lock:
            if len(self._cache) >= _CACHE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = out
        return out
