"""The expand stage: widen the retrieved sections (backtracking, reflection, the bridge query).

Runs after retrieval on the fused sections: directory backtracking
(:mod:`vdgr_core.query.backtrack`) adds neighbours of weak evidence in the table of contents;
reflection (:mod:`vdgr_core.query.reflection`) judges the evidence and retrieves again with a
refined query, and the bridge-entity follow-up searches once with the evidence's entities. New
sections are merged with :func:`vdgr_core.query.fusion.add_candidates`, which keeps the first
round's best in place. Every follow-up search runs inside the query's scope.
"""
from __future__ import annotations

import numpy as np

from schemas.config import ExpandSettings
from vdgr_core.embedding import embed_query
from vdgr_core.query.backtrack import backtrack
from vdgr_core.query.context import QueryContext, Search
from vdgr_core.query.fusion import SectionHit, add_candidates
from vdgr_core.query.reflection import BRIDGE_SECTIONS, best_sentence, bridge_query, judge, refine_offline

EXPANSIONS = 3


class Expander:
    """Backtracking and reflection over one query's sections.

    Parameters
    ----------
    view : IndexView
    vectors : VectorSearch
    graph : GraphRoute
        Entities of the evidence and of the question (reflection's expansions, the bridge).
    retriever : Retriever
        The follow-up searches.
    embedder : Embedder
        Embeds refined and follow-up queries.
    settings : ExpandSettings
    llm : LLMClient, optional
    """

    def __init__(self, view, vectors, graph, retriever, embedder, settings: ExpandSettings, llm=None):
        self._view = view
        self._vectors = vectors
        self._graph = graph
        self._retriever = retriever
        self._embedder = embedder
        self._settings = settings
        self._llm = llm

    def expand(self, ctx: QueryContext) -> list[SectionHit]:
        """``ctx.hits`` widened by the enabled steps for ``ctx.search``, at most ``ctx.k`` of the
        first round's kept (each step timed in the trace under its name)."""
        s = self._settings
        q, hits, k = ctx.search, ctx.hits, ctx.k
        if not (s.backtrack or s.rounds > 0 or s.reflection_bridge):
            return hits
        if s.backtrack:
            with q.trace.stage("backtrack"):
                hits = self.with_backtrack(q, hits, k)
        if s.rounds > 0 or s.reflection_bridge:
            with q.trace.stage("reflection"):
                hits = self.reflect(q, hits, k)
        return hits

    def with_backtrack(self, q: Search, hits: list[SectionHit], k: int) -> list[SectionHit]:
        """Backtracked sections merged below the best evidence (at most a third of ``k``)."""
        added = backtrack(self._view, self._vectors, q, hits[:k], depth=self._settings.backtrack_depth,
                          llm=self._llm)
        n_add = min(len(added), max(1, k // 3), k - 1)   # the best evidence always stays
        if n_add <= 0:
            return hits
        return add_candidates(hits, added[:n_add], k - n_add)

    def reflect(self, q: Search, hits: list[SectionHit], k: int) -> list[SectionHit]:
        """Reflection rounds, then the bridge follow-up; only sections in ``q``'s scope are kept."""
        question, trace = q.text, q.trace
        asked = {question.strip()}
        # the bridge-entity follow-up is its own switch: it runs with or without the rounds
        for rnd in range(1, self._settings.rounds + 1):
            j = judge(question, hits[:k], self._view, self._llm)
            if j.sufficient:
                trace.step("reflection", f"round {rnd}: sufficient", coverage=j.coverage, by=j.by)
                break
            refined = j.refined_query if j.by == "llm" and j.refined_query else None
            if refined is None:
                refined = refine_offline(question, j, self._expansions(q))
            if not refined or refined.strip() in asked:
                trace.step("reflection", f"round {rnd}: insufficient, no new query", coverage=j.coverage,
                           gap=j.gap, by=j.by)
                break
            asked.add(refined.strip())
            trace.step("reflection", f"round {rnd}: insufficient, refined query", coverage=j.coverage,
                       gap=j.gap, refined_query=refined, by=j.by)
            more = self._retriever.retrieve(q.about(refined, self._embed(refined)))
            hits = add_candidates(hits, more, k // 2)
        if self._settings.reflection_bridge:
            hits = self._bridge(q, hits, k)
        cmask = self._view.contents.mask(q.scope)
        return [h for h in hits if cmask[h.row]]

    def _embed(self, text: str) -> np.ndarray:
        return np.asarray(embed_query(self._embedder, [text])[0], dtype=np.float32)

    def _bridge(self, q: Search, hits: list[SectionHit], k: int) -> list[SectionHit]:
        """One bridge-entity follow-up search, merged below the first half of the evidence."""
        data = self._view
        emask = self._graph.visible_entities(q)
        rows = [r for h in hits[:BRIDGE_SECTIONS] for r in h.rows[:4]]
        names = [data.entities.name[r] for r in self._graph.entities_of(rows, emask)]
        focus = best_sentence(q.text, [data.contents.text[r] for r in rows]).lower()
        names = [n for n in names if n.lower() in focus]
        follow = bridge_query(q.text, names)
        if follow is None:
            q.trace.step("reflection", "bridge: no entity beyond the question's")
            return hits
        q.trace.step("reflection", "bridge: follow-up query from the evidence's entities", query=follow)
        more = self._retriever.retrieve(q.about(follow, self._embed(follow)))
        return add_candidates(hits, [SectionHit(h.section, h.score, h.rows, ("reflection",)) for h in more],
                              k // 2)

    def _expansions(self, q: Search) -> list[str]:
        emask = self._graph.visible_entities(q)
        matched = self._graph.matched_entities(q, emask)
        return [self._view.entities.name[r] for r in self._graph.neighbours(matched, emask, EXPANSIONS)]
