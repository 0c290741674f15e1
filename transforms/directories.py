"""Directory nodes: containment edges and bottom-up summaries per domain tree."""
from __future__ import annotations

import logging

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.config import BuildConfig
from schemas.tables import CONTAINS
from transforms.annotate import LLM_CALLS, LLM_FALLBACKS
from vdgr_core.indexing.rows import edge_row
from vdgr_core.indexing.tree_summary import llm_directory_summarizer, summarize_tree

_log = logging.getLogger("vdgr.build")


class _SummarizeTreeDoFn(beam.DoFn):
    def __init__(self, config: BuildConfig):
        self._config = config
        self._client = None
        self._summarizer = None
        self._fallbacks = Metrics.counter("vdgr", LLM_FALLBACKS)
        self._calls = Metrics.counter("vdgr", LLM_CALLS)

    def _on_fallback(self, title: str, reason: str) -> None:
        self._fallbacks.inc()
        _log.warning("LLM summary failed for directory %r; extractive summary used: %s", title, reason)

    def setup(self):
        if self._config.llm is not None:
            from vdgr_core.llm.client import LLMClient

            self._client = LLMClient(self._config.llm)
            self._summarizer = llm_directory_summarizer(
                self._client, max_chars=self._config.summary_max_chars + 200,
                on_fallback=self._on_fallback)

    def process(self, kv):
        _domain, grouped = kv
        nodes = list(grouped["nodes"])
        chunks = list(grouped["chunks"])
        before = self._client.total_calls() if self._client is not None else 0
        out = summarize_tree(nodes, chunks, self._summarizer,
                             max_chars=self._config.summary_max_chars + 200)
        if self._client is not None:
            self._calls.inc(self._client.total_calls() - before)
        yield from out

    def teardown(self):
        if self._client is not None:
            self._client.close()
            self._client = None
            self._summarizer = None


class SummarizeDirectories(beam.PTransform):
    """(merged directory nodes, contents) -> directory nodes with bottom-up summaries.

    One tree per domain: the deepest directories are summarized first from their chunks'
    summaries, then each parent from its children's summaries.
    """

    def __init__(self, config: BuildConfig):
        super().__init__()
        self._config = config

    def expand(self, pcolls):
        nodes, contents = pcolls
        keyed_nodes = nodes | "Key node by domain" >> beam.Map(lambda n: (n.domain, n))
        keyed_chunks = contents | "Chunk summary by domain" >> beam.Map(
            lambda a: (a.chunk.domain, (a.chunk.parent_id, a.chunk.position, a.chunk.summary, a.chunk.acl)))
        return ({"nodes": keyed_nodes, "chunks": keyed_chunks}
                | "Group tree" >> beam.CoGroupByKey()
                | "Summarize bottom-up" >> beam.ParDo(_SummarizeTreeDoFn(self._config)))


class ContainmentEdges(beam.PTransform):
    """directory -> directory and directory -> content edges."""

    def expand(self, pcolls):
        nodes, contents = pcolls
        dir_edges = (nodes
                     | "Has parent" >> beam.Filter(lambda n: bool(n.parent_id))
                     | "Dir edge" >> beam.Map(lambda n: edge_row(CONTAINS, n.parent_id, n.node_id, n.domain, 1.0)))
        content_edges = contents | "Content edge" >> beam.Map(
            lambda a: edge_row(CONTAINS, a.chunk.parent_id, a.chunk.chunk_id, a.chunk.domain, 1.0))
        return (dir_edges, content_edges) | "All containment" >> beam.Flatten()
