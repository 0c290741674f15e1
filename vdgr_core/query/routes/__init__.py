"""Retrieval routes: one class per file, found by name in :data:`REGISTRY`.

Every module of this package is imported here, so a new route is one file holding one class
decorated with :func:`register` (see :mod:`vdgr_core.query.routes.base`).
"""
from __future__ import annotations

import importlib
import pkgutil

from vdgr_core.query.routes.base import REGISTRY, Route, RouteDeps, build_routes, register

for _m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _m.name != "base":
        importlib.import_module(f"{__name__}.{_m.name}")

__all__ = ["REGISTRY", "Route", "RouteDeps", "build_routes", "register"]
