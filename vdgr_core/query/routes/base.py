"""The :class:`Route` protocol, what routes are built from, and the registry of route names.

A route is one class in one file of this package, registered under its name with
:func:`register`; the package imports every module in it, so adding the file is all a new
route takes (and naming it in ``QueryConfig.routes``). A route turns one :class:`Search`
into a :class:`SectionList`: sections best first, at most ``depth`` of them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional, Protocol, runtime_checkable

from schemas.config import FusionSettings, GraphSettings, TocSettings
from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionList
from vdgr_core.query.rerank import Reranker
from vdgr_core.query.vectors import VectorSearch
from vdgr_core.query.view import IndexView


@runtime_checkable
class Route(Protocol):
    """One retrieval route.

    Attributes
    ----------
    name : str
        The registry name (``QueryConfig.routes``) and the route label of its hits.
    first_hop : bool
        True for route 1 (BM25, dense, hybrid): its fused sections seed the second hop.
    second_hop : bool
        True for a route that walks on from route 1's fused sections (the graph walk): when a
        first-hop route runs in the same query, it is searched with ``Search.first_hop`` set and
        its list replaces route 1's lists in the fusion (:class:`vdgr_core.query.pipeline.Retriever`).
    """

    name: ClassVar[str]
    first_hop: ClassVar[bool]
    second_hop: ClassVar[bool]

    def search(self, q: Search, depth: int) -> SectionList:
        """The best ``depth`` sections for ``q`` inside ``q.scope``."""
        ...


@dataclass
class RouteDeps:
    """What the routes of one knowledge base are built from (shared, built once).

    ``graph`` is the :class:`vdgr_core.query.graph_route.GraphRoute`; ``llm`` is optional
    (TOC selection); the TOC label index is built on first use.
    """

    view: IndexView
    vectors: VectorSearch
    reranker: Reranker
    graph: Any
    fusion: FusionSettings
    graph_settings: GraphSettings
    toc: TocSettings
    llm: Optional[Any] = None
    _labels: Any = field(default=None, repr=False)

    @property
    def labels(self):
        """The TOC label index (:class:`vdgr_core.query.toc_index.LabelIndex`), built on first use."""
        if self._labels is None:
            from vdgr_core.query.toc_index import LabelIndex

            self._labels = LabelIndex(self.view)
        return self._labels


REGISTRY: dict[str, type] = {}


def register(cls: type) -> type:
    """Class decorator: register a route class under its ``name``."""
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"route {cls.name!r} registered twice")
    REGISTRY[cls.name] = cls
    return cls


def build_routes(deps: RouteDeps, names) -> dict[str, Route]:
    """One instance of each route in ``names`` (unknown names: ValueError)."""
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown route(s) {unknown}; registered: {sorted(REGISTRY)}")
    return {n: REGISTRY[n](deps) for n in dict.fromkeys(names)}
