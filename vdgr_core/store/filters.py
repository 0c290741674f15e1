"""Typed search filters (domain, version, access groups) for LanceDB and tantivy.

Filters are built with LanceDB's expression builder (``lancedb.expr``) and tantivy's query
objects: user-supplied values are passed as literals, never pasted into SQL text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from schemas.errors import ConfigError

_GROUP_RE = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")


def validate_group(name: str) -> str:
    """Return ``name`` if it is a valid group name, else raise ConfigError."""
    if not isinstance(name, str) or not _GROUP_RE.match(name):
        raise ConfigError(f"invalid access group name {name!r}")
    return name


@dataclass(frozen=True)
class SearchScope:
    """Who is asking and where to look. Applied as a pre-filter on every search.

    ``groups=()`` sees only public nodes; ``domains``/``versions`` of None mean all.
    """

    groups: tuple[str, ...] = ()
    domains: Optional[tuple[str, ...]] = None
    versions: Optional[tuple[str, ...]] = None

    def __post_init__(self):
        for g in self.groups:
            validate_group(g)

    def with_domains(self, domains) -> "SearchScope":
        return SearchScope(self.groups, tuple(domains), self.versions)

    def can_see(self, acl) -> bool:
        """Python-side check, for rows already loaded in memory (same rule as the filters)."""
        return not acl or bool(set(acl) & set(self.groups))

    def lance_expr(self):
        """A ``lancedb.expr.Expr`` restricting a directories/contents table to this scope."""
        from lancedb.expr import col, lit

        expr = col("public").eq(lit(True))
        for g in self.groups:
            expr = expr | col("acl_text").contains(lit(f"|{g}|"))
        if self.domains is not None:
            expr = expr & col("domain").isin(list(self.domains))
        if self.versions is not None:
            expr = expr & col("version").isin(list(self.versions))
        return expr
