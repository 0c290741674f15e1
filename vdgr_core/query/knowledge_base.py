"""``KnowledgeBase``: the query side of VDGR opened on one index build."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterable, Optional, Sequence, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from schemas.config import EmbeddingConfig, QueryConfig
from schemas.errors import ConfigError, LLMError
from vdgr_core.embedding import embed_query
from vdgr_core.ids import stable_id
from vdgr_core.query.guardrails import screen_answer, screen_query
from vdgr_core.query.answer import extractive_answer, llm_answer
from vdgr_core.query.backtrack import backtrack
from vdgr_core.query.compress import compress_evidence
from vdgr_core.query.confidence import clarification, retrieval_confidence
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.vectors import VectorSearch
from vdgr_core.query.view import IndexView
from vdgr_core.query.fusion import SectionHit, add_candidates, cap_per_document
from vdgr_core.query.graph_route import GraphRoute
from vdgr_core.query.passage import section_passage
from vdgr_core.query.pipeline import Retriever
from vdgr_core.query.reflection import BRIDGE_SECTIONS, best_sentence, bridge_query, judge, refine_offline
from vdgr_core.query.rerank import make_reranker
from vdgr_core.query.result import Evidence, QueryResult
from vdgr_core.query.routing import Router
from vdgr_core.query.trace import TraceRecorder
from vdgr_core.store.filters import SearchScope
from vdgr_core.store.reader import IndexReader

EXPANSIONS = 3


@contextmanager
def _one_blas_thread():
    """Run a query's matrix-vector products on one BLAS thread.

    A query's products (ten thousand rows x 384) take well under a millisecond on one core;
    spread over all cores of a shared machine they wait for a busy core (measured 5 ms per
    product with the other core loaded). Without threadpoolctl this is a no-op.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
            _CONTROLLER = ThreadpoolController()      # scans the loaded libraries once
        except ImportError:  # pragma: no cover - optional
            _CONTROLLER = False
    if not _CONTROLLER:
        yield
        return
    with _CONTROLLER.limit(limits=1, user_api="blas"):
        yield


_CONTROLLER = None


class QueryItem(BaseModel):
    """One line of a batch file: ``{"id", "question", optional "domain", "version", "groups"}``."""

    model_config = ConfigDict(extra="ignore")
    id: Optional[str] = None
    question: str
    domain: Optional[str] = None
    version: Optional[str] = None
    groups: list[str] = Field(default_factory=list)


REFUSAL = "I can't answer this question: it asks about a topic this knowledge base does not cover."


class KnowledgeBase:
    """Question answering over one index (see :meth:`open`).

    Nothing is loaded at open: queries read the domains' memory-mapped layouts, the LanceDB
    vector indexes (scope as prefilter) and the tantivy shards (:class:`IndexView`). Queries of
    one instance run one at a time (they share the LLM usage counters).
    """

    def __init__(self, reader: IndexReader, data: IndexView, config: QueryConfig, embedder, llm=None,
                 vectors: Optional[VectorSearch] = None):
        self.reader = reader
        self.data = data
        self.config = config
        self.embedder = embedder
        self.llm = llm
        # another knowledge base's VectorSearch may be shared (same view and ann settings)
        self.vectors = vectors if vectors is not None else VectorSearch(data, config)
        self.router = Router(data, reader.manifest.domains, reader, config, self.vectors, llm)
        self.graph = GraphRoute(data, self.vectors, config)
        self.retriever = Retriever(reader, data, self.vectors, config, make_reranker(config.reranker, llm),
                                   self.graph, llm)

    @classmethod
    def open(cls, index_dir: str, config: QueryConfig = QueryConfig(), embedder=None, llm=None) -> "KnowledgeBase":
        """Open the index at ``index_dir`` (through its manifest).

        Parameters
        ----------
        index_dir : str
            The index folder.
        config : QueryConfig
        embedder : Embedder, optional
            Defaults to ``make_embedder(config.embedding)``; it must be the model the index
            was built with (same ``model_id`` and ``dim``), else ConfigError.
        llm : LLMClient, optional
            Defaults to ``LLMClient(config.llm)`` when ``config.llm`` is set; offline otherwise.

        Raises
        ------
        schemas.errors.IndexError_
            No readable manifest, or an index written before query layouts existed.
        schemas.errors.ConfigError
            The embedder does not match the index.
        """
        reader = IndexReader(index_dir)
        m = reader.manifest
        if embedder is None:
            from vdgr_core.embedding import make_embedder

            emb = config.embedding
            if emb.precision == "auto":        # "auto" opens the index in the precision it records
                emb = emb.model_copy(update={"precision": EmbeddingConfig.for_index(
                    m.embedding_model, m.dim).precision})
            embedder = make_embedder(emb)
        from vdgr_core.embedding import same_model

        if not same_model(m.embedding_model, embedder.model_id) or int(embedder.dim) != int(m.dim):
            raise ConfigError(
                f"embedder {embedder.model_id!r} (dim {embedder.dim}) does not match the index, "
                f"built with {m.embedding_model!r} (dim {m.dim}); query with the same embedding model")
        if llm is None and config.llm is not None:
            from vdgr_core.llm.client import LLMClient
            llm = LLMClient(config.llm)
        return cls(reader, IndexView(reader), config, embedder, llm)

    # ------------------------------------------------------------------ API
    def visible(self, groups: Sequence[str] = ()):
        """The domains ``groups`` can read something in, with their readable collections and
        versions (:class:`vdgr_core.query.visibility.Visible`)."""
        return self.router.visibility(tuple(groups))

    def query(self, question: str, *, domain: Optional[str] = None, version: Optional[str] = None,
              groups: Sequence[str] = (), k: Optional[int] = None, qid: Optional[str] = None,
              with_answer: bool = True) -> QueryResult:
        """Answer ``question``.

        Parameters
        ----------
        domain, version : str, optional
            Hard filters (routing then only reports the explicit domain).
        groups : sequence of str
            The user's access groups; rows restricted to other groups are never candidates.
        k : int, optional
            Evidence items to return (default ``config.k``).
        qid : str, optional
            Result id (default: a digest of the question and filters).
        with_answer : bool
            False: retrieval only, ``answer`` left empty (a caller that streams the answer).
        """
        with _one_blas_thread():
            return self._query(question, domain=domain, version=version, groups=tuple(groups), k=k, qid=qid,
                               with_answer=with_answer)

    def query_batch(self, items: Iterable[Union[QueryItem, dict]], k: Optional[int] = None) -> list[QueryResult]:
        """Answer many questions (in order); question vectors are embedded in one batch."""
        items = [i if isinstance(i, QueryItem) else QueryItem.model_validate(i) for i in items]
        named = [self.router.named_text(i.question) for i in items]
        extra = sorted({t for t in named if t})
        vecs = embed_query(self.embedder, [i.question for i in items] + extra) if items else []
        pre = {t: vecs[len(items) + n] for n, t in enumerate(extra)}
        with _one_blas_thread():
            return [self._query(i.question, domain=i.domain, version=i.version, groups=tuple(i.groups),
                                k=k, qid=i.id, qvec=vecs[n], pre=pre) for n, i in enumerate(items)]

    # ------------------------------------------------------------------ internals
    def _query(self, question: str, *, domain, version, groups, k, qid, qvec=None, pre=None,
               with_answer=True) -> QueryResult:
        cfg = self.config
        k = k or cfg.k
        trace = TraceRecorder(self.llm)
        scope = SearchScope(groups=tuple(groups), domains=(domain,) if domain else None,
                            versions=(version,) if version else None)
        qid = qid or stable_id("query", question, domain or "", version or "", *sorted(groups), length=16)
        screen = screen_query(question, cfg.guardrails.deny_list)
        if not screen.allowed:
            trace.step("guardrails", "question refused by the query screen", reason=screen.reason)
            return QueryResult(id=qid, question=question, answer=REFUSAL, routing=[], evidence=[],
                               trace=trace.finish())
        with trace.stage("embed"):
            pre = dict(pre or {})
            if qvec is None:
                # the question and (when it names a domain) the text without that name, in
                # one batch: routing nearly always picks the named domain
                named = self.router.named_text(question)
                vecs = embed_query(self.embedder, [question, named] if named else [question])
                qvec = vecs[0]
                if named:
                    pre[named] = vecs[1]
            qvec = np.asarray(qvec, dtype=np.float32)
        with trace.stage("routing"):
            decision = self.router.route(question, qvec, QueryScope(scope), trace, domain=domain)
        domains = decision.names
        qscope = QueryScope(scope.with_domains(domains), decision.collections)
        # the routes search with the question minus the span naming the routed domain
        rq = decision.query or question
        if rq != question:
            with trace.stage("embed"):
                v = pre.get(rq)
                qvec = np.asarray(v if v is not None else embed_query(self.embedder, [rq])[0], dtype=np.float32)
        with trace.stage("retrieve"):
            hits = self.retriever.retrieve(rq, qvec, qscope, domains, trace)
        cmask = self.data.contents.mask(qscope)
        if cfg.backtrack:
            with trace.stage("backtrack"):
                hits = self._with_backtrack(rq, qvec, hits, cmask, k, trace)
        if (cfg.reflection and cfg.reflection_rounds > 0) or cfg.reflection_bridge:
            with trace.stage("reflection"):
                hits = self._reflect(rq, hits, qscope, domains, cmask, k, trace)
        hits = cap_per_document(hits, self.data.sections.doc, k)
        evidence = [self._evidence(h) for h in hits[:k]]
        flags = self.data.contents.flags
        flagged = {self.data.contents.ids[r]: list(flags[r])
                   for h in hits[:k] for r in section_passage(self.data, h.section, h.rows).rows if flags[r]}
        if flagged:
            trace.step("guardrails", f"{len(flagged)} evidence chunks read like instructions to a model "
                       "(possible prompt injection; passed to any LLM as delimited data only)",
                       injection_flags=flagged)
        if not with_answer:
            return QueryResult(id=qid, question=question, answer="", routing=decision.domains,
                               evidence=evidence, trace=trace.finish())
        with trace.stage("answer"):
            answer = self._answer(question, evidence, trace)
            if cfg.guardrails.screen_answers:
                answer = self._screen(answer, evidence, trace)
        return QueryResult(id=qid, question=question, answer=answer, routing=decision.domains,
                           evidence=evidence, trace=trace.finish())

    def _with_backtrack(self, question, qvec, hits: list[SectionHit], cmask, k, trace) -> list[SectionHit]:
        added = backtrack(self.data, self.vectors, question, qvec, hits[:k], cmask, self.config, trace, self.llm)
        n_add = min(len(added), max(1, k // 3), k - 1)   # the best evidence always stays
        if n_add <= 0:
            return hits
        return add_candidates(hits, added[:n_add], k - n_add)

    def _reflect(self, question, hits, qscope, domains, cmask, k, trace) -> list[SectionHit]:
        cfg = self.config
        asked = {question.strip()}
        # the bridge-entity follow-up is its own switch: it runs with or without the rounds
        for rnd in range(1, (cfg.reflection_rounds if cfg.reflection else 0) + 1):
            j = judge(question, hits[:k], self.data, self.llm)
            if j.sufficient:
                trace.step("reflection", f"round {rnd}: sufficient", coverage=j.coverage, by=j.by)
                break
            refined = j.refined_query if j.by == "llm" and j.refined_query else None
            if refined is None:
                refined = refine_offline(question, j, self._expansions(question, qscope, domains))
            if not refined or refined.strip() in asked:
                trace.step("reflection", f"round {rnd}: insufficient, no new query", coverage=j.coverage,
                           gap=j.gap, by=j.by)
                break
            asked.add(refined.strip())
            trace.step("reflection", f"round {rnd}: insufficient, refined query", coverage=j.coverage,
                       gap=j.gap, refined_query=refined, by=j.by)
            rvec = np.asarray(embed_query(self.embedder, [refined])[0], dtype=np.float32)
            more = self.retriever.retrieve(refined, rvec, qscope, domains, trace)
            hits = add_candidates(hits, more, k // 2)
        if cfg.reflection_bridge:
            hits = self._bridge(question, hits, qscope, domains, k, trace)
        return [h for h in hits if cmask[h.row]]

    def _bridge(self, question, hits, qscope, domains, k, trace) -> list[SectionHit]:
        """One bridge-entity follow-up search, merged below the first half of the evidence."""
        emask = self.graph.visible_entities(qscope, domains)
        rows = [r for h in hits[:BRIDGE_SECTIONS] for r in h.rows[:4]]
        names = [self.data.entities.name[r] for r in self.graph.entities_of(rows, emask)]
        focus = best_sentence(question, [self.data.contents.text[r] for r in rows]).lower()
        names = [n for n in names if n.lower() in focus]
        follow = bridge_query(question, names)
        if follow is None:
            trace.step("reflection", "bridge: no entity beyond the question's")
            return hits
        trace.step("reflection", "bridge: follow-up query from the evidence's entities", query=follow)
        fvec = np.asarray(embed_query(self.embedder, [follow])[0], dtype=np.float32)
        more = self.retriever.retrieve(follow, fvec, qscope, domains, trace)
        return add_candidates(hits, [SectionHit(h.section, h.score, h.rows, ("reflection",)) for h in more],
                              k // 2)

    def _expansions(self, question, qscope, domains) -> list[str]:
        emask = self.graph.visible_entities(qscope, domains)
        matched = self.graph.matched_entities(question, emask, domains)
        return [self.data.entities.name[r] for r in self.graph.neighbours(matched, emask, EXPANSIONS)]

    def _evidence(self, h: SectionHit) -> Evidence:
        c = self.data.contents
        r = h.row
        p = section_passage(self.data, h.section, h.rows)
        return Evidence(chunk_id=c.ids[r], domain=c.domain[r], version=c.version[r] or "",
                        source=c.source[r], path=list(c.path[r]), title=c.title[r], text=p.text,
                        score=round(float(h.score), 8), routes=list(h.routes),
                        section_id=c.parent_id[r] or "", chunk_ids=[c.ids[x] for x in p.rows],
                        page=c.page[r])

    def _screen(self, answer: str, evidence: list[Evidence], trace) -> str:
        """Answer screen: redactions and unsupported sentences are recorded in the trace."""
        g = self.config.guardrails
        checked = screen_answer(answer, [e.text for e in evidence], min_support=g.min_support,
                                phone_regions=g.phone_regions)
        if checked.redactions or checked.unsupported:
            trace.step("guardrails", "answer screened", redacted=list(checked.redactions),
                       unsupported=list(checked.unsupported))
        return checked.answer

    def _answer(self, question, evidence, trace) -> str:
        conf = retrieval_confidence(question, evidence, self.config.min_confidence)
        trace.step("confidence", "low: asking for clarification" if conf.low else "ok", **conf.trace_data())
        if conf.low and evidence:
            return clarification(question, conf, evidence)
        if self.llm is not None and evidence:
            ctx = compress_evidence(question, evidence, self.config.context_budget_tokens)
            trace.step("compress", "evidence compressed for the LLM", **ctx.trace_data())
            try:
                return llm_answer(self.llm, question, ctx.evidence)
            except LLMError as exc:
                trace.step("answer", "LLM answer failed: extractive answer used", error=str(exc)[:200])
        return extractive_answer(question, evidence)
