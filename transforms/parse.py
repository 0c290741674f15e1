"""Read and parse documents; failures go to a tagged dead-letter output."""
from __future__ import annotations

import logging

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas.config import BuildConfig
from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import DocumentTask
from vdgr_core.indexing.document import dead_letter_for, process_document, read_bytes_limited

DEAD_LETTER = "dead_letter"
_log = logging.getLogger("vdgr.build")


def _join(root: str, rel: str) -> str:
    return FileSystems.join(root, *rel.split("/"))


class _ParseDoFn(beam.DoFn):
    def __init__(self, config: BuildConfig):
        self._config = config
        self._docs = Metrics.counter("vdgr", "documents_parsed")
        self._chunks = Metrics.counter("vdgr", "chunks")
        self._dead = Metrics.counter("vdgr", "dead_letters")
        self._seen = 0          # progress lines only; nothing depends on these counts
        self._seen_chunks = 0

    def process(self, task: DocumentTask):
        data = None
        try:
            try:
                data = read_bytes_limited(FileSystems.open, _join(task.corpus_root, task.rel_path),
                                          self._config.limits.max_file_bytes)
            except OSError as e:
                raise DocumentError(DeadLetterReason.READ_ERROR, str(e)) from e
            doc = process_document(task, data, self._config)
        except DocumentError as e:
            self._dead.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter_for(task, data, e))
            return
        self._docs.inc()
        self._chunks.inc(len(doc.chunks))
        self._seen += 1
        self._seen_chunks += len(doc.chunks)
        if self._seen % 200 == 0:
            _log.info("parsed %d documents (%d chunks) in this worker", self._seen, self._seen_chunks)
        yield doc


class ParseDocuments(beam.PTransform):
    """DocumentTask -> IndexedDocument, with DeadLetter records on the ``dead_letter`` tag.

    A file that is empty, binary, undecodable, truncated, enormous or unparsable never
    stops the build: it is counted and lands in the dead-letter table with its reason.
    """

    def __init__(self, config: BuildConfig):
        super().__init__()
        self._config = config

    def expand(self, tasks):
        return tasks | "Read and parse" >> beam.ParDo(_ParseDoFn(self._config)).with_outputs(
            DEAD_LETTER, main="documents")
