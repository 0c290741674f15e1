"""The Beam part of a document-level update: only the arriving documents go through it.

Added, changed and moved-in documents are parsed, chunked, annotated and embedded (cached) by the
same transforms as the full build; the pipeline stages their documents, contents, dead-letter
rows and their unmerged directory nodes. What depends on whole domains (entity statistics,
co-occurrence weights, merged nodes, summaries, BM25 shards) is done afterwards by the driver
from these rows and the stored ones (pipelines/delta_update.py).
"""
from __future__ import annotations

import apache_beam as beam

from pipelines.build import _dead_document_row, _document_row, _join_vectors, staged_schema
from pipelines.staging import Staging
from schemas import tables as T
from schemas.config import BuildConfig
from transforms.annotate import AnnotateChunks
from transforms.embed import NEW_VECTORS, EmbedTexts
from transforms.merge import DedupContents
from transforms.parse import DEAD_LETTER, ParseDocuments
from transforms.write import WriteStagedTable
from vdgr_core.corpus import CorpusScan
from vdgr_core.embedding import embedding_key
from vdgr_core.indexing.rows import annotated_row, content_embedding_text, dead_letter_row, directory_row

NODES = "nodes"   # staged table: unmerged directory nodes of the arriving documents


def node_row(node) -> dict:
    """A directory node as a staged row (no summary yet, no vector)."""
    row = directory_row(node, ())
    del row["vector"]
    return row


def staged_node_schema(dim: int):
    schema = T.schema_for(T.DIRECTORIES, dim)
    return schema.remove(schema.get_field_index("vector"))


def changed_documents_pipeline(p: beam.Pipeline, config: BuildConfig, scan: CorpusScan, *, model_id: str,
                               dim: int, staging: Staging, dead_from_scan=()) -> None:
    """Add to ``p`` the per-document work of an update over ``scan`` (the arriving documents)."""
    tasks = p | "Discover changed documents" >> beam.Create(list(scan.tasks))
    tasks_by_path = {t.rel_path: t for t in scan.tasks}
    parsed = tasks | "Parse documents" >> ParseDocuments(config)
    docs = parsed.documents
    dead = ((parsed[DEAD_LETTER], p | "Skipped files" >> beam.Create(list(dead_from_scan)))
            | "All dead letters" >> beam.Flatten())
    annotated = (docs
                 | "Chunks" >> beam.FlatMap(lambda d: d.chunks)
                 | "Annotate chunks" >> AnnotateChunks(config)
                 | "Dedup contents" >> DedupContents())

    def content_key(a):
        return embedding_key(model_id, content_embedding_text(a.chunk.path, a.chunk.text))

    embedded = (annotated
                | "Content texts" >> beam.Map(
                    lambda a: (content_key(a), content_embedding_text(a.chunk.path, a.chunk.text)))
                | "Embed" >> EmbedTexts(config))
    content_rows = ({"item": annotated | "Key content" >> beam.Map(lambda a: (content_key(a), a)),
                     "vector": embedded.vectors}
                    | "Join content vectors" >> beam.CoGroupByKey()
                    | "Content row" >> beam.FlatMap(_join_vectors, make_row=annotated_row))
    document_rows = ((docs | "Document row" >> beam.Map(_document_row),
                      dead | "Dead document row" >> beam.Map(_dead_document_row, tasks_by_path=tasks_by_path))
                     | "All document rows" >> beam.Flatten())
    outputs = {
        T.DOCUMENTS: (document_rows, staged_schema(T.DOCUMENTS, dim)),
        T.CONTENTS: (content_rows, staged_schema(T.CONTENTS, dim)),
        T.DEAD_LETTERS: (dead | "Dead letter row" >> beam.Map(dead_letter_row), staged_schema(T.DEAD_LETTERS, dim)),
        T.EMBEDDING_CACHE: (embedded[NEW_VECTORS], staged_schema(T.EMBEDDING_CACHE, dim)),
        NODES: (docs | "Document nodes" >> beam.FlatMap(lambda d: d.directories)
                | "Node row" >> beam.Map(node_row), staged_node_schema(dim)),
    }
    for name, (rows, schema) in outputs.items():
        _ = rows | f"Stage {name}" >> WriteStagedTable(staging.prefix(name), schema)


__all__ = ["changed_documents_pipeline", "NODES", "staged_node_schema"]
