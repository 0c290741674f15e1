"""Directory nodes: containment edges and bottom-up summaries per domain tree."""
from __future__ import annotations

import apache_beam as beam

from schemas.config import BuildConfig
from schemas.tables import CONTAINS
from vdgr_core.indexing.rows import edge_row
from vdgr_core.indexing.tree_summary import llm_directory_summarizer, summarize_tree


class _SummarizeTreeDoFn(beam.DoFn):
    def __init__(self, config: BuildConfig):
        self._config = config
        self._summarizer = None

    def setup(self):
        if self._config.llm is not None:
            from vdgr_core.llm.client import LLMClient

            self._summarizer = llm_directory_summarizer(LLMClient(self._config.llm))

    def process(self, kv):
        _domain, grouped = kv
        nodes = list(grouped["nodes"])
        chunks = list(grouped["chunks"])
        yield from summarize_tree(nodes, chunks, self._summarizer,
                                  max_chars=self._config.summary_max_chars + 200)


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
