"""The query as a short list of typed stages over one :class:`QueryContext`.

screen -> route -> retrieve -> expand -> evidence -> answer:

1. **screen** (:func:`vdgr_core.query.guardrails.screen_query`): a deny-listed question is
   refused before any search;
2. **route** (:class:`vdgr_core.query.routing.Router`): embed the question (and the text
   without the domain it names, in one batch), choose the domains and collections among what
   the caller may read, set the routed scope and the retrieval text;
3. **retrieve** (:class:`vdgr_core.query.pipeline.Retriever`): the configured routes from the
   registry, fused;
4. **expand** (:class:`vdgr_core.query.expand.Expander`): backtracking, reflection, the
   bridge query;
5. **evidence** (:mod:`vdgr_core.query.evidence`): within each document the sections the
   question names first (:mod:`vdgr_core.query.named`), at most half of ``k`` per document, the
   second half of ``k`` to each single retriever's best section not shown yet
   (:func:`vdgr_core.query.fusion.recall_tail`), the sections' passages (with ``entry_first``
   on, a reference entry among the first three first for an option or default question);
6. **answer** (:class:`vdgr_core.query.answer_stage.AnswerStage`): the screened answer.

Every search of stages 3-4 runs inside the routed scope (the caller's groups, versions,
domains and collections), which each route applies before it selects anything.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from schemas.config import RetrieveSettings
from vdgr_core.embedding import embed_query
from vdgr_core.query.answer_stage import AnswerStage
from vdgr_core.query.context import QueryContext, Search
from vdgr_core.query.evidence import entry_first, injection_flags, to_evidence
from vdgr_core.query.expand import Expander
from vdgr_core.query.fusion import cap_per_document, copies_last, recall_tail
from vdgr_core.query.guardrails import screen_query
from vdgr_core.query.named import named_first
from vdgr_core.query.neutral import citations
from vdgr_core.query.pipeline import Retriever
from vdgr_core.query.result import QueryResult
from vdgr_core.query.routing import Router
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.view import IndexView

REFUSAL = "I can't answer this question: it asks about a topic this knowledge base does not cover."


class QueryStages:
    """The stages of one knowledge base, run in order over a :class:`QueryContext`.

    Parameters
    ----------
    view : IndexView
    embedder : Embedder
    router : Router
    retriever : Retriever
    expander : Expander
    answerer : AnswerStage
    deny_list : sequence of str
        The query screen's blocked words and phrases.
    retrieve : RetrieveSettings
        Its ``named_first`` (the sections the question names first within their document),
        ``copies_last`` (sections repeating an earlier one behind the first ``k``) and
        ``recall_tail`` (the second half of ``k`` to each single retriever's best unseen
        section) and ``entry_first`` (an option's or a default's entry first) shape the
        evidence stage.
    """

    def __init__(self, view: IndexView, embedder, router: Router, retriever: Retriever, expander: Expander,
                 answerer: AnswerStage, deny_list: Sequence[str] = (),
                 retrieve: RetrieveSettings = RetrieveSettings()):
        self.view = view
        self.named = retrieve.named_first
        self.copies = retrieve.copies_last
        self.tail = retrieve.recall_tail
        self.entry = retrieve.entry_first
        self.embedder = embedder
        self.router = router
        self.retriever = retriever
        self.expander = expander
        self.answerer = answerer
        self.deny_list = tuple(deny_list)

    def run(self, ctx: QueryContext, *, with_answer: bool = True) -> QueryResult:
        """Run every stage; ``with_answer=False`` stops after the evidence (``answer`` '')."""
        if not self.screen(ctx):
            return self.result(ctx, REFUSAL)
        self.route(ctx)
        if ctx.domains:
            with ctx.trace.stage("retrieve"):
                ctx.hits, ctx.parts = self.retriever.retrieve_with_parts(ctx.search)
            ctx.hits = self.expander.expand(ctx)
        else:       # nothing the caller may read (or no such domain): no search work at all
            ctx.hits = []
            ctx.trace.step("retrieve", "no readable domain: nothing searched")
        self.evidence(ctx)
        if with_answer:
            with ctx.trace.stage("answer"):
                ctx.answer = self.answerer.answer(ctx.question, ctx.evidence, ctx.trace)
        return self.result(ctx, ctx.answer)

    def screen(self, ctx: QueryContext) -> bool:
        """The query screen; False (and a trace step) when the question is refused."""
        screen = screen_query(ctx.question, self.deny_list)
        if not screen.allowed:
            ctx.trace.step("guardrails", "question refused by the query screen", reason=screen.reason)
        return screen.allowed

    def route(self, ctx: QueryContext) -> None:
        """Embed, route, and set ``ctx.search``: the routed scope, retrieval text and vector."""
        trace = ctx.trace
        with trace.stage("embed"):
            if ctx.qvec is None:
                # the question and (when it names a domain) the text without that name, in
                # one batch: routing nearly always picks the named domain
                named = self.router.named_text(ctx.question)
                vecs = embed_query(self.embedder, [ctx.question, named] if named else [ctx.question])
                ctx.qvec = vecs[0]
                if named:
                    ctx.pre[named] = vecs[1]
            ctx.qvec = np.asarray(ctx.qvec, dtype=np.float32)
        with trace.stage("routing"):
            decision = self.router.route(ctx.question, ctx.qvec, ctx.scope, trace, domain=ctx.domain)
        ctx.routing, ctx.domains = decision.domains, decision.names
        scope = QueryScope(ctx.scope.search.with_domains(ctx.domains), decision.collections)
        # the routes search with the question minus the span naming the routed domain
        text, qvec = decision.query or ctx.question, ctx.qvec
        if text != ctx.question:
            with trace.stage("embed"):
                v = ctx.pre.get(text)
                qvec = np.asarray(v if v is not None else embed_query(self.embedder, [text])[0], dtype=np.float32)
        ctx.search = Search(text, qvec, scope, ctx.domains, trace)

    def evidence(self, ctx: QueryContext) -> None:
        """The named sections first in their documents, copies of an earlier section behind the
        first ``k``, at most half of ``k`` per document, the second half of ``k`` to each single
        retriever's best section not shown yet, then the first ``k`` sections as evidence (with
        ``entry_first``, an option's or a default's entry among the first three goes first)."""
        hits = ctx.hits
        if self.named:
            hits = named_first(ctx.question, hits[: 3 * ctx.k], self.view.sections.doc,
                               self._unit_title) + list(hits[3 * ctx.k:])
        if self.copies:
            hits = copies_last(hits, self._copy_key, ctx.k)
        hits = cap_per_document(hits, self.view.sections.doc, ctx.k)
        if self.tail:
            key = self._copy_key if self.copies else (lambda h: h.section)
            hits = recall_tail(hits, ctx.parts, ctx.k, self.view.sections.doc, key)
        hits = hits[: ctx.k]
        ctx.evidence = [to_evidence(self.view, h) for h in hits]
        if self.entry:
            ctx.evidence = entry_first(ctx.question, ctx.evidence)
        flagged = injection_flags(self.view, hits)
        if flagged:
            ctx.trace.step("guardrails", f"{len(flagged)} evidence chunks read like instructions to a model "
                           "(possible prompt injection; passed to any LLM as delimited data only)",
                           injection_flags=flagged)

    def _copy_key(self, h) -> tuple:
        """What two copies of one section share: domain, version, title, chunk count and the text
        of the first chunk (the copies met are whole sections repeated, one perhaps with a closing
        line of its page: SQLite's C reference prints each interface on its own page, "See also"
        under it, and again on one page). The same text in two versions of a product is no copy:
        an answer quotes each version."""
        c = self.view.contents
        rows = self.view.sections.rows[h.section]
        first = rows[0] if len(rows) else h.row
        return (c.domain[h.row], c.version[h.row], c.title[h.row], len(rows), " ".join(c.text[first].split()))

    def _unit_title(self, h) -> str:
        """The title of a hit's section as a unit a question can name: "" for the text before a
        document's first heading (its title is the document's, which names the whole page)."""
        node = self.view.sections.node(h.section)
        if node is None or self.view.directories.kind_of[node] == "document":
            return ""
        return self.view.contents.title[h.row]

    @staticmethod
    def result(ctx: QueryContext, answer: str) -> QueryResult:
        """The result of ``ctx`` with ``answer`` (the trace finished now)."""
        return QueryResult(id=ctx.qid, question=ctx.question, answer=answer, routing=ctx.routing,
                           evidence=ctx.evidence, trace=ctx.trace.finish(),
                           citations=citations(answer, len(ctx.evidence)))
