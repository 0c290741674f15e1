"""Summaries and technical terms per chunk (offline, or one LLM call per chunk)."""
from __future__ import annotations

import apache_beam as beam

from schemas.config import BuildConfig
from vdgr_core.indexing.annotate import annotate


class _AnnotateDoFn(beam.DoFn):
    def __init__(self, config: BuildConfig):
        self._config = config
        self._client = None

    def setup(self):
        if self._config.llm is not None:
            from vdgr_core.llm.client import LLMClient

            self._client = LLMClient(self._config.llm)

    def process(self, chunk):
        c = self._config
        yield annotate(chunk, self._client, max_terms=c.max_entities_per_chunk,
                       summary_sentences=c.summary_sentences, summary_max_chars=c.summary_max_chars)


class AnnotateChunks(beam.PTransform):
    """Chunk -> AnnotatedChunk (chunk with summary and entities, mentions, co-occurring pairs)."""

    def __init__(self, config: BuildConfig):
        super().__init__()
        self._config = config

    def expand(self, chunks):
        return chunks | "Summarize and extract terms" >> beam.ParDo(_AnnotateDoFn(self._config))
