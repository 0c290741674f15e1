"""Directory nodes: bottom-up summaries, documents first, then folders level by level.

No step holds a whole domain: documents (their section trees and chunk summaries, packed into
one compressed value each: vdgr_core/indexing/per_document.py, ``pack_tree``) are grouped
by document node id (one document, or the few a directory merge joins), summarized there, and
each top node's summary goes up as a child record; then each folder level is one grouping by
folder node id, deepest level first, of the folder nodes, their children's summaries and any
document node merged into them. The number of levels is the corpus's folder depth, known when
the pipeline is built. The result equals one bottom-up pass over each domain
(tests/support/tree_summary.py; tested).
"""
from __future__ import annotations

import logging

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.config import SummarySettings
from schemas.tables import CONTAINS
from transforms.documents import LLM_CALLS, LLM_FALLBACKS
from vdgr_core.indexing.per_document import pack_tree, unpack_tree
from vdgr_core.indexing.rows import edge_row
from vdgr_core.indexing.tree_summary import (Child, llm_directory_summarizer, merge_two,
                                             summarize_document_group, summarize_level_node)

_log = logging.getLogger("vdgr.build")
UP = "up"


class _SummarizerDoFn(beam.DoFn):
    """Holds the LLM client and summarizer when an LLM is configured (offline otherwise)."""

    def __init__(self, settings: SummarySettings):
        self._settings = settings
        self._client = None
        self._summarizer = None
        self._fallbacks = Metrics.counter("vdgr", LLM_FALLBACKS)
        self._calls = Metrics.counter("vdgr", LLM_CALLS)

    @property
    def _max_chars(self) -> int:
        return self._settings.max_chars

    def _on_fallback(self, title: str, reason: str) -> None:
        self._fallbacks.inc()
        _log.warning("LLM summary failed for directory %r; extractive summary used: %s", title, reason)

    def setup(self):
        if self._settings.llm is not None:
            from vdgr_core.llm.client import LLMClient

            self._client = LLMClient(self._settings.llm)
            self._summarizer = llm_directory_summarizer(self._client, max_chars=self._max_chars,
                                                        on_fallback=self._on_fallback)

    def _count_calls(self, before: int) -> None:
        if self._client is not None:
            self._calls.inc(self._client.total_calls() - before)

    def _calls_now(self) -> int:
        return self._client.total_calls() if self._client is not None else 0

    def teardown(self):
        if self._client is not None:
            self._client.close()
            self._client = None
            self._summarizer = None


class _DocumentGroupDoFn(_SummarizerDoFn):
    def process(self, kv, folder_ids):
        _doc_node_id, packed = kv
        before = self._calls_now()
        nodes, records = summarize_document_group([unpack_tree(p) for p in packed], folder_ids, self._summarizer,
                                                  max_chars=self._max_chars)
        self._count_calls(before)
        yield from nodes
        for record in records:
            yield beam.pvalue.TaggedOutput(UP, record)


class _LevelDoFn(_SummarizerDoFn):
    def process(self, kv):
        node_id, records = kv
        before = self._calls_now()
        node = summarize_level_node(node_id, records, self._summarizer, max_chars=self._max_chars)
        self._count_calls(before)
        if node is None:
            raise ValueError(f"directory records for {node_id!r} without the node itself")
        yield node
        if node.parent_id:
            yield beam.pvalue.TaggedOutput(UP, (node.level - 1, node.parent_id, (
                "child", Child(node.node_id, node.title, node.summary, tuple(node.acl)))))


def _level_of(record, n_levels: int) -> int:
    level = record[0]
    if not 0 <= level < n_levels:
        raise ValueError(f"directory record at level {level}, outside the folder levels 0..{n_levels - 1}")
    return level


class SummarizeDirectoriesByLevel(beam.PTransform):
    """(document trees keyed by document node id, folder nodes) -> the directory nodes, merged
    and with their summaries, as one PCollection per step (document nodes, then each folder
    level, deepest first).

    The parts are not flattened here: what consumes them (embedding, staging) then runs in the
    stage that produced each part, and no runner has to hold every directory node between
    stages (Beam's in-process runner hands a stage its whole input).

    Parameters
    ----------
    max_folder_level:
        The deepest folder node level (the corpus's folder depth; 0 = domain nodes only).
    """

    def __init__(self, settings: SummarySettings, max_folder_level: int):
        super().__init__()
        self._settings = settings
        self._levels = max_folder_level + 1

    def expand(self, pcolls):
        trees, folder_nodes = pcolls
        folders = (folder_nodes
                   | "Key folder" >> beam.Map(lambda n: (n.node_id, n))
                   | "Merge folders" >> beam.CombinePerKey(lambda ns: _merge_all(ns)))
        folder_ids = beam.pvalue.AsDict(folders | "Folder id" >> beam.MapTuple(lambda i, _n: (i, True)))
        documents = (trees
                     | "Pack document trees" >> beam.MapTuple(lambda i, t: (i, pack_tree(t)))
                     | "Group by document node" >> beam.GroupByKey()
                     | "Summarize documents" >> beam.ParDo(_DocumentGroupDoFn(self._settings), folder_ids)
                     .with_outputs(UP, main="nodes"))
        static = ((documents[UP],
                   folders | "Folder record" >> beam.MapTuple(lambda i, n: (n.level, i, ("node", n))))
                  | "Level records" >> beam.Flatten()
                  | "By level" >> beam.Partition(_level_of, self._levels))
        finished = [documents.nodes]
        carried = None
        for level in range(self._levels - 1, -1, -1):
            inputs = [static[level]] + ([carried] if carried is not None else [])
            done = (inputs
                    | f"Level {level} records" >> beam.Flatten()
                    | f"Key level {level}" >> beam.Map(lambda r: (r[1], r[2]))
                    | f"Group level {level}" >> beam.GroupByKey()
                    | f"Summarize level {level}" >> beam.ParDo(_LevelDoFn(self._settings)).with_outputs(UP, main="nodes"))
            finished.append(done.nodes)
            carried = done[UP]
        if carried is not None:      # level 0 (domains) has no parent: nothing may be left
            _ = carried | "Nothing above domains" >> beam.Map(_unexpected)
        return tuple(finished)


def _merge_all(nodes):
    nodes = iter(nodes)
    out = next(nodes)
    for n in nodes:
        out = merge_two(out, n)
    return out


def _unexpected(record):
    raise ValueError(f"directory record above the domain level: {record!r}")


def containment_edge(node) -> list[dict]:
    """The directory -> directory edge of a merged node (none for a domain root)."""
    return [edge_row(CONTAINS, node.parent_id, node.node_id, node.domain, 1.0)] if node.parent_id else []
