"""Read and parse documents; failures go to a tagged dead-letter output."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from schemas.config import ParseSettings
from schemas.records import DeadLetter, DocumentTask
from transforms.read import open_read
from vdgr_core.indexing.document import load_document
from vdgr_core.progress import PROGRESS

DEAD_LETTER = "dead_letter"


class _ParseDoFn(beam.DoFn):
    def __init__(self, parse: ParseSettings):
        self._parse = parse
        self._docs = Metrics.counter("vdgr", "documents_parsed")
        self._chunks = Metrics.counter("vdgr", "chunks")
        self._dead = Metrics.counter("vdgr", "dead_letters")

    def process(self, task: DocumentTask):
        doc = load_document(task, self._parse, open_read, FileSystems.join)
        PROGRESS.parsed()               # progress lines only; nothing depends on it
        if isinstance(doc, DeadLetter):
            self._dead.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, (doc, task))
            return
        self._docs.inc()
        self._chunks.inc(len(doc.chunks))
        yield doc


class ParseDocuments(beam.PTransform):
    """DocumentTask -> IndexedDocument, with (DeadLetter, DocumentTask) on the ``dead_letter`` tag.

    A file that is empty, binary, undecodable, truncated, enormous or unparsable never
    stops the build: it is counted and lands in the dead-letter table with its reason.
    """

    def __init__(self, parse: ParseSettings):
        super().__init__()
        self._parse = parse

    def expand(self, tasks):
        return tasks | "Read and parse" >> beam.ParDo(_ParseDoFn(self._parse)).with_outputs(
            DEAD_LETTER, main="documents")
