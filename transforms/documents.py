"""Tasks from the task manifest, and per-document annotation."""
from __future__ import annotations

import json
import logging

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.config import AnnotateSettings
from schemas.records import DeadLetter
from vdgr_core.corpus import task_from_json
from vdgr_core.indexing.annotate import annotate_chunks
from vdgr_core.indexing.per_document import AnnotatedDocument

SKIPPED = "skipped"
# Beam counters (namespace "vdgr") the build report reads back.
LLM_FALLBACKS = "llm_fallbacks"   # chunks / directories that fell back to the offline path
LLM_CALLS = "llm_calls"           # HTTP requests sent to the LLM endpoint (cache hits excluded)
_log = logging.getLogger("vdgr.build")


def _decode_task_line(line: str):
    d = json.loads(line)
    if "task" in d:
        yield task_from_json(json.dumps(d["task"]))
    else:
        rel_path, domain, reason, detail = d["skipped"]
        yield beam.pvalue.TaggedOutput(SKIPPED, DeadLetter(rel_path, domain, reason, detail))


class ReadTasks(beam.PTransform):
    """The task manifest (JSON lines written by the driver) -> DocumentTask, plus the files the
    scan skipped as DeadLetter on the ``skipped`` output. A file-pattern source: workers read
    the parts, so the job graph does not grow with the corpus."""

    def __init__(self, pattern: str):
        super().__init__()
        self._pattern = pattern

    def expand(self, pbegin):
        return (pbegin
                | "Read task manifest" >> beam.io.ReadFromText(self._pattern)
                | "Decode tasks" >> beam.FlatMap(_decode_task_line).with_outputs(SKIPPED, main="tasks"))


class _AnnotateDocumentDoFn(beam.DoFn):
    """One document -> its chunks annotated (one structured LLM call per chunk when an LLM is
    configured, offline otherwise). A chunk whose LLM call fails permanently is annotated
    offline, logged and counted in ``llm_fallbacks``: never dropped, never passed off as done."""

    def __init__(self, settings: AnnotateSettings):
        self._settings = settings
        self._client = None
        self._fallbacks = Metrics.counter("vdgr", LLM_FALLBACKS)
        self._calls = Metrics.counter("vdgr", LLM_CALLS)

    def setup(self):
        if self._settings.llm is not None:
            from vdgr_core.llm.client import LLMClient

            self._client = LLMClient(self._settings.llm)

    def process(self, doc):
        before = self._client.total_calls() if self._client is not None else 0
        done = annotate_chunks(doc.chunks, self._client, self._settings)
        for chunk, reason in done.fallbacks:
            self._fallbacks.inc()
            log_fallback(chunk, reason)
        if self._client is not None:
            self._calls.inc(self._client.total_calls() - before)
        yield AnnotatedDocument(doc, done.annotated)

    def teardown(self):
        if self._client is not None:
            self._client.close()
            self._client = None


def log_fallback(chunk, reason: str) -> None:
    """Log a chunk whose LLM annotation failed for good (annotated offline instead)."""
    _log.warning("LLM annotation failed for chunk %s of %s; offline annotation used: %s",
                 chunk.chunk_id, chunk.source, reason)


class AnnotateDocuments(beam.PTransform):
    """IndexedDocument -> AnnotatedDocument (summary, terms, mentions, pairs of every chunk)."""

    def __init__(self, settings: AnnotateSettings):
        super().__init__()
        self._settings = settings

    def expand(self, docs):
        return docs | "Summarize and extract terms" >> beam.ParDo(_AnnotateDocumentDoFn(self._settings))
