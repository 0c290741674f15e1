"""``KnowledgeBase``: the query side of VDGR opened on one index build."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Optional, Sequence, Union

from pydantic import BaseModel, ConfigDict, Field

from schemas.config import EmbeddingConfig, QueryConfig
from schemas.errors import ConfigError
from vdgr_core.embedding import embed_query
from vdgr_core.ids import stable_id
from vdgr_core.query.answer_stage import AnswerStage
from vdgr_core.query.context import QueryContext
from vdgr_core.query.expand import Expander
from vdgr_core.query.graph_route import GraphRoute
from vdgr_core.query.neutral import citations
from vdgr_core.query.pipeline import Retriever
from vdgr_core.query.rerank import make_reranker
from vdgr_core.query.result import QueryResult
from vdgr_core.query.routes import REGISTRY, RouteDeps, build_routes
from vdgr_core.query.routing import Router
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.stages import QueryStages
from vdgr_core.query.trace import StepLog, TraceRecorder
from vdgr_core.query.vectors import VectorSearch
from vdgr_core.query.view import IndexView
from vdgr_core.store.filters import SearchScope
from vdgr_core.store.reader import IndexReader



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


class KnowledgeBase:
    """Question answering over one index (see :meth:`open`).

    Nothing is loaded at open: queries read the domains' memory-mapped layouts, the LanceDB
    vector indexes (scope as prefilter) and the tantivy shards (:class:`IndexView`). Queries of
    one instance run one at a time (they share the LLM usage counters).

    A query is a :class:`vdgr_core.query.context.QueryContext` passed through
    :class:`vdgr_core.query.stages.QueryStages` (screen, route, retrieve, expand, evidence,
    answer); each component is built from its own slice of ``config`` (``config.slices``).

    Parameters
    ----------
    reader : IndexReader
    data : IndexView
    config : QueryConfig
    embedder
        Embeds questions (the index's model).
    llm : LLMClient, optional
    vectors : VectorSearch, optional
        Shared with another knowledge base over the same view and ANN settings.
    graph : GraphRoute, optional
        The graph walk the graph route and the expansion use; by default the index's own.
    """

    def __init__(self, reader: IndexReader, data: IndexView, config: QueryConfig, embedder, llm=None,
                 vectors: Optional[VectorSearch] = None, graph: Optional[GraphRoute] = None):
        self.reader = reader
        self.data = data
        self.config = config
        self.embedder = embedder
        self.llm = llm
        sl = config.slices
        unknown = [r for r in sl.retrieve.routes if r not in REGISTRY]
        if unknown:
            raise ConfigError(f"unknown route(s) {unknown}; registered: {', '.join(sorted(REGISTRY))}")
        # another knowledge base's VectorSearch may be shared (same view and ann settings)
        self.vectors = vectors if vectors is not None else VectorSearch(data, sl.ann)
        self.router = Router(data, sl.routing, self.vectors, llm)
        # a graph walk of the caller's (a research variant over the same view), else the index's
        self.graph = graph if graph is not None else GraphRoute(data, self.vectors, sl.graph)
        deps = RouteDeps(data, self.vectors, make_reranker(config.reranker, llm), self.graph, sl.fusion, sl.graph,
                         sl.toc, llm)
        self.retriever = Retriever(data, build_routes(deps, REGISTRY), sl.retrieve, sl.fusion, llm)
        self.expander = Expander(data, self.vectors, self.graph, self.retriever, embedder, sl.expand, llm)
        self.answerer = AnswerStage(sl.answer, llm)
        self.stages = QueryStages(data, embedder, self.router, self.retriever, self.expander, self.answerer,
                                  config.guardrails.deny_list, sl.retrieve)

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
            The embedder does not match the index, or ``config.routes`` names a route no
            module of :mod:`vdgr_core.query.routes` registers.
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

    def answer_pieces(self, result: QueryResult, *, llm: Any = None, stream: bool = True,
                      usage_out=None) -> Iterator[str]:
        """The answer to ``result`` (retrieved with ``with_answer=False``), piece by piece.

        The same answer stage as :meth:`query` (one screen, the same fallbacks); its steps are
        added to ``result.trace``, and ``result.answer`` and ``result.citations`` are set once
        the pieces are exhausted.

        Parameters
        ----------
        result : QueryResult
        llm : LLMClient, optional
            The LLM to stream from (a client of the caller's own, for its usage counts);
            None: the extractive answer.
        stream : bool
            Stream the LLM's reply (stage ``answer_stream``) instead of one request.
        usage_out : StageUsage, optional
            Receives the stream's LLM calls and tokens.
        """
        sent = []
        for piece in self.answerer.pieces(result.question, result.evidence, StepLog(result.trace), llm=llm,
                                          stream=stream, usage_out=usage_out):
            sent.append(piece)
            yield piece
        result.answer = "".join(sent).strip()
        result.citations = citations(result.answer, len(result.evidence))

    # ------------------------------------------------------------------ internals
    def _query(self, question: str, *, domain, version, groups, k, qid, qvec=None, pre=None,
               with_answer=True) -> QueryResult:
        scope = SearchScope(groups=tuple(groups), domains=(domain,) if domain else None,
                            versions=(version,) if version else None)
        qid = qid or stable_id("query", question, domain or "", version or "", *sorted(groups), length=16)
        ctx = QueryContext(question=question, qid=qid, scope=QueryScope(scope), k=k or self.config.k,
                           trace=TraceRecorder(self.llm), domain=domain, qvec=qvec, pre=dict(pre or {}))
        return self.stages.run(ctx, with_answer=with_answer)

    def _evidence(self, h):
        """The evidence item of a section hit (:func:`vdgr_core.query.evidence.to_evidence`)."""
        from vdgr_core.query.evidence import to_evidence

        return to_evidence(self.data, h)
