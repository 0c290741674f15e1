"""Summaries and technical terms per chunk (offline, or one LLM call per chunk)."""
from __future__ import annotations

import logging

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.config import BuildConfig
from vdgr_core.indexing.annotate import annotate_or_fall_back

_log = logging.getLogger("vdgr.build")

# Beam counters (namespace "vdgr") the build report reads back.
LLM_FALLBACKS = "llm_fallbacks"   # chunks / directories that fell back to the offline path
LLM_CALLS = "llm_calls"           # HTTP requests sent to the LLM endpoint (cache hits excluded)


class _AnnotateDoFn(beam.DoFn):
    """One structured LLM call per chunk when an LLM is configured; offline otherwise.

    A chunk whose LLM call fails permanently (HTTP 4xx, or out of contract after every retry)
    is annotated offline instead, logged, and counted in ``llm_fallbacks``: it is never dropped
    and never silently passed off as LLM-annotated.
    """

    def __init__(self, config: BuildConfig):
        self._config = config
        self._client = None
        self._fallbacks = Metrics.counter("vdgr", LLM_FALLBACKS)
        self._calls = Metrics.counter("vdgr", LLM_CALLS)

    def setup(self):
        if self._config.llm is not None:
            from vdgr_core.llm.client import LLMClient

            self._client = LLMClient(self._config.llm)

    def process(self, chunk):
        c = self._config
        before = self._client.total_calls() if self._client is not None else 0
        outcome = annotate_or_fall_back(chunk, self._client, max_terms=c.max_entities_per_chunk,
                                        summary_sentences=c.summary_sentences,
                                        summary_max_chars=c.summary_max_chars)
        if self._client is not None:
            self._calls.inc(self._client.total_calls() - before)
        if outcome.fallback_reason is not None:
            self._fallbacks.inc()
            _log.warning("LLM annotation failed for chunk %s of %s; offline annotation used: %s",
                         chunk.chunk_id, chunk.source, outcome.fallback_reason)
        yield outcome.annotated

    def teardown(self):
        if self._client is not None:
            self._client.close()
            self._client = None


class AnnotateChunks(beam.PTransform):
    """Chunk -> AnnotatedChunk (chunk with summary and entities, mentions, co-occurring pairs)."""

    def __init__(self, config: BuildConfig):
        super().__init__()
        self._config = config

    def expand(self, chunks):
        return chunks | "Summarize and extract terms" >> beam.ParDo(_AnnotateDoFn(self._config))
