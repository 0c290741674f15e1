"""The per-document part of an update: the arriving documents' rows.

Added, changed and moved-in documents are parsed, chunked and annotated by the same functions as
the full build, in one of two ways that give the same rows:

* ``process_in_driver``: in this process, for a small change (no pipeline start-up); the texts
  are embedded later, in one batch with the directory summaries the change touches;
* ``changed_documents_pipeline``: the Beam pipeline (parse, annotate, embed with the cache), for a
  large change, staged like a build.

What depends on whole domains (entity statistics, co-occurrence weights, merged nodes, summaries,
BM25 shards) is done afterwards by the driver from these rows and the stored ones
(pipelines/delta_update.py).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from pipelines.build import content_items, dead_document_row, document_secret_findings, with_vector
from pipelines.staging import Staging
from schemas import tables as T
from schemas.config import BuildConfig, BuildSlices
from schemas.records import DeadLetter
from transforms.documents import SKIPPED, AnnotateDocuments, ReadTasks, log_fallback
from transforms.embed import NEW_VECTORS, EmbedInBatches
from transforms.parse import DEAD_LETTER, ParseDocuments
from transforms.write import CountRows, PublishStaged, StageRows
from transforms.read import open_read
from vdgr_core.corpus import CorpusScan
from vdgr_core.indexing.annotate import annotate_chunks
from vdgr_core.indexing.document import load_document
from vdgr_core.indexing.per_document import content_row_without_vector, document_row
from vdgr_core.indexing.rows import dead_letter_row, directory_row
from vdgr_core.progress import PROGRESS

NODES = "nodes"   # staged table: unmerged directory nodes of the arriving documents
_log = logging.getLogger("vdgr.update")


@dataclass(frozen=True)
class ArrivingRows:
    """The rows of the arriving documents, before the driver merges them into their domains."""

    documents: pa.Table
    dead_letters: pa.Table
    contents: pa.Table       # with ``vector`` when the pipeline embedded them, else without
    nodes: pa.Table          # unmerged directory nodes (no summary, no vector)
    new_vectors: pa.Table    # vectors the pipeline computed (for the embedding cache)
    embeddings_computed: int = 0
    embeddings_from_cache: int = 0
    llm_calls: int = 0
    llm_fallbacks: int = 0
    secret_findings: pa.Table = field(
        default_factory=lambda: pa.Table.from_pylist([], schema=T.secret_findings_schema()))

    @property
    def embedded(self) -> bool:
        return "vector" in self.contents.schema.names


def _schema_without_vector(name: str, dim: int) -> pa.Schema:
    schema = T.schema_for(name, dim)
    return schema.remove(schema.get_field_index("vector"))


def process_in_driver(slices: BuildSlices, scan: CorpusScan, dead_from_scan: Sequence[DeadLetter],
                      dim: int) -> ArrivingRows:
    """Parse, chunk and annotate the documents of ``scan`` here (texts not embedded yet).

    The same per-document functions as the pipeline's DoFns: ``load_document`` (bad input becomes
    a dead letter), ``annotate_chunks`` (LLM failures counted), and the content dedup rule.
    """
    client = None
    if slices.annotate.llm is not None:
        from vdgr_core.llm.client import LLMClient

        client = LLMClient(slices.annotate.llm)
    tasks_by_path = {t.rel_path: t for t in scan.tasks}
    docs, dead = [], list(dead_from_scan)
    for task in scan.tasks:
        loaded = load_document(task, slices.parse, open_read, FileSystems.join)
        PROGRESS.parsed()               # progress lines only; nothing depends on it
        (dead if isinstance(loaded, DeadLetter) else docs).append(loaded)
    try:
        done = annotate_chunks([c for d in docs for c in d.chunks], client, slices.annotate)
        for chunk, reason in done.fallbacks:
            log_fallback(chunk, reason)
        annotated, fallbacks = done.annotated, len(done.fallbacks)
        calls = client.total_calls() if client is not None else 0
    finally:
        if client is not None:
            client.close()
    content_rows = [content_row_without_vector(a) for a in annotated]
    return ArrivingRows(
        documents=pa.Table.from_pylist([document_row(d) for d in docs] + [
            dead_document_row(x, tasks_by_path.get(x.rel_path)) for x in dead], schema=T.documents_schema()),
        dead_letters=pa.Table.from_pylist([dead_letter_row(x) for x in dead], schema=T.dead_letters_schema()),
        contents=pa.Table.from_pylist(content_rows, schema=_schema_without_vector(T.CONTENTS, dim)),
        nodes=pa.Table.from_pylist([node_row(n) for d in docs for n in d.directories],
                                   schema=staged_node_schema(dim)),
        new_vectors=pa.Table.from_pylist([], schema=T.embedding_cache_schema(dim)),
        llm_calls=calls, llm_fallbacks=fallbacks,
        secret_findings=pa.Table.from_pylist([r for d in docs for r in document_secret_findings(d)],
                                             schema=T.secret_findings_schema()),
    )


def node_row(node) -> dict:
    """A directory node as a staged row (no summary yet, no vector)."""
    row = directory_row(node, ())
    del row["vector"]
    return row


def staged_node_schema(dim: int) -> pa.Schema:
    return _schema_without_vector(T.DIRECTORIES, dim)


def changed_documents_pipeline(p: beam.Pipeline, config: BuildConfig, scan: CorpusScan, *, model_id: str,
                               dim: int, staging: Staging, dead_from_scan=()) -> None:
    """Add to ``p`` the per-document work of an update over ``scan`` (the arriving documents):
    the build's steps up to the embedded content rows, staged (small: the change only)."""
    read = p | "Tasks" >> ReadTasks(staging.write_tasks(scan, dead_from_scan))
    slices = config.slices
    parsed = read.tasks | "Parse documents" >> ParseDocuments(slices.parse)
    annotated = parsed.documents | "Annotate documents" >> AnnotateDocuments(slices.annotate)
    embedded = (annotated
                | "Content texts" >> beam.FlatMap(content_items, model_id=model_id)
                | "Embed contents" >> EmbedInBatches(slices.embed, with_vector))
    dead = ((parsed[DEAD_LETTER], read[SKIPPED] | "Skipped files" >> beam.Map(lambda d: (d, None)))
            | "All dead letters" >> beam.Flatten())
    document_rows = ((annotated | "Document row" >> beam.Map(lambda a: document_row(a.doc)),
                      dead | "Dead document row" >> beam.MapTuple(dead_document_row))
                     | "All document rows" >> beam.Flatten())
    outputs = {
        T.DOCUMENTS: (document_rows, T.schema_for(T.DOCUMENTS, dim)),
        T.CONTENTS: (embedded.rows, T.schema_for(T.CONTENTS, dim)),
        T.DEAD_LETTERS: (dead | "Dead letter row" >> beam.MapTuple(lambda d, _t: dead_letter_row(d)),
                         T.schema_for(T.DEAD_LETTERS, dim)),
        T.EMBEDDING_CACHE: (embedded[NEW_VECTORS], T.embedding_cache_schema(dim)),
        T.SECRET_FINDINGS: (parsed.documents | "Secret finding rows" >> beam.FlatMap(document_secret_findings),
                            T.schema_for(T.SECRET_FINDINGS, dim)),
        NODES: (parsed.documents | "Document nodes" >> beam.FlatMap(lambda d: d.directories)
                | "Node row" >> beam.Map(node_row), staged_node_schema(dim)),
    }
    staged = [rows | f"Stage {name}" >> StageRows(name, staging.prefix(name), schema, digest=False)
              for name, (rows, schema) in outputs.items()]
    counts = CountRows.of({name: [rows] for name, (rows, _schema) in outputs.items()})
    _ = [*staged, counts] | "All staged" >> beam.Flatten() | "Publish staged" >> PublishStaged(staging.root)


def read_staged(staging: Staging, dim: int, counter) -> ArrivingRows:
    """The rows ``changed_documents_pipeline`` staged (``counter(name)`` reads its metrics)."""
    return ArrivingRows(
        documents=staging.read_table(T.DOCUMENTS, T.schema_for(T.DOCUMENTS, dim)),
        dead_letters=staging.read_table(T.DEAD_LETTERS, T.schema_for(T.DEAD_LETTERS, dim)),
        contents=staging.read_table(T.CONTENTS, T.schema_for(T.CONTENTS, dim)),
        nodes=staging.read_table(NODES, staged_node_schema(dim)),
        new_vectors=staging.read_table(T.EMBEDDING_CACHE, T.embedding_cache_schema(dim)),
        embeddings_computed=counter("embeddings_computed"),
        embeddings_from_cache=counter("embeddings_from_cache"),
        llm_calls=counter("llm_calls"), llm_fallbacks=counter("llm_fallbacks"),
        secret_findings=staging.read_table(T.SECRET_FINDINGS, T.schema_for(T.SECRET_FINDINGS, dim)),
    )


__all__ = ["ArrivingRows", "process_in_driver", "changed_documents_pipeline", "read_staged", "NODES"]
