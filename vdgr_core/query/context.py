"""The one object a query's stages pass along, and the search request a route receives.

A :class:`QueryContext` is made per query by :class:`vdgr_core.query.stages.QueryStages` and
filled in stage by stage: route (embedding, domains, scope, retrieval text) -> retrieve
(fused sections) -> expand (backtracking, reflection) -> evidence -> answer. A
:class:`Search` is what one route, or one follow-up retrieval, searches with: a text, its
vector, the scope and the routed domains (LlamaIndex's ``QueryBundle`` plus the filters).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

import numpy as np

from vdgr_core.query.fusion import SectionHit, SectionList
from vdgr_core.query.result import DomainScore, Evidence
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.trace import TraceRecorder


@dataclass(frozen=True)
class Search:
    """One search request.

    Attributes
    ----------
    text : str
        What the routes search with (the question, or a refined or follow-up query).
    qvec : ndarray
        The embedding of ``text``.
    scope : QueryScope
        Access, versions and collections; its domains are ``domains``.
    domains : tuple of str
        The routed domains, best first.
    trace : TraceRecorder
    first_hop : sequence of SectionHit, optional
        The graph route only: route 1's fused sections, which seed the walk.
    """

    text: str
    qvec: np.ndarray
    scope: QueryScope
    domains: tuple[str, ...]
    trace: TraceRecorder
    first_hop: Optional[Sequence[SectionHit]] = None

    def seeded(self, first_hop: Sequence[SectionHit]) -> "Search":
        """The same search with route 1's sections as the graph walk's seeds."""
        return replace(self, first_hop=first_hop)

    def about(self, text: str, qvec: np.ndarray) -> "Search":
        """The same scope and domains, another text (reflection, the bridge query)."""
        return replace(self, text=text, qvec=np.asarray(qvec, dtype=np.float32), first_hop=None)


@dataclass
class QueryContext:
    """One query, as it passes through the stages.

    Set at the start: ``question`` (as asked), ``qid``, ``scope`` (the caller's groups and the
    hard domain/version filters), ``domain``, ``k``, ``trace``, ``qvec`` and ``pre`` when the
    caller embedded ahead (a batch). The route stage sets ``routing``, ``domains``, ``search``
    (routed scope, retrieval text and its vector); retrieve and expand set ``hits`` (retrieve
    also ``parts``, route 1's single-retriever lists); the
    evidence stage sets ``evidence``; the answer stage ``answer``.
    """

    question: str
    qid: str
    scope: QueryScope
    k: int
    trace: TraceRecorder
    domain: Optional[str] = None
    qvec: Optional[np.ndarray] = None
    pre: dict = field(default_factory=dict)
    routing: list[DomainScore] = field(default_factory=list)
    domains: tuple[str, ...] = ()
    search: Optional[Search] = None
    hits: list[SectionHit] = field(default_factory=list)
    parts: tuple[SectionList, ...] = ()
    evidence: list[Evidence] = field(default_factory=list)
    answer: str = ""
