"""The full build: corpus folder -> H2KG tables + BM25 shards, committed under one manifest.

Graph of the pipeline (each box a composite PTransform from ``transforms/``)::

    tasks -> ParseDocuments -+-> chunks -> AnnotateChunks -> DedupContents --+
                             |                                               |
                             +-> directories + folders -> DedupDirectories --+-> SummarizeDirectories
                             +-> dead letters                                |
    contents + directories -> EmbedRows (distinct texts embedded, cached; rows made there)
    annotated -> MergeEntities / CooccurrenceEdges / ContainmentEdges -> edges
    rows -> StageParquet (per bundle) -> PublishStagedFiles (one step) -> commit (driver)
    (entity vectors are added at commit from the has_entity edges and content vectors)
"""
from __future__ import annotations


import apache_beam as beam
import numpy as np

from pipelines.staging import Staging
from schemas import tables as T
from schemas.config import BuildConfig
from transforms.annotate import AnnotateChunks
from transforms.directories import ContainmentEdges, SummarizeDirectories
from transforms.embed import NEW_VECTORS, EmbedRows, PrefetchEmbeddings
from transforms.merge import CooccurrenceEdges, DedupContents, DedupDirectories, MergeEntities
from transforms.parse import DEAD_LETTER, ParseDocuments
from transforms.write import BuildTantivyShards, PublishStagedFiles, StageLines, StageParquet
from vdgr_core.chunking import folder_nodes
from vdgr_core.corpus import CorpusScan
from vdgr_core.embedding import embedding_key
from vdgr_core.ids import doc_id
from vdgr_core.indexing.fingerprint import skipped_fingerprint, task_fingerprint
from vdgr_core.indexing.rows import (annotated_row, content_embedding_text, dead_letter_row,
                                     directory_embedding_text, directory_row, secret_finding_rows)


def _document_row(doc) -> dict:
    t = doc.task
    return {"doc_id": doc.doc_id, "path": t.rel_path, "domain": t.domain, "collection": t.collection,
            "version": doc.meta.version, "acl": sorted(doc.meta.acl), "title": doc.title,
            "content_hash": doc.content_hash, "fingerprint": task_fingerprint(t, doc.content_hash),
            "status": "indexed", "n_chunks": len(doc.chunks)}


def _dead_document_row(d, tasks_by_path) -> dict:
    task = tasks_by_path.get(d.rel_path)
    meta = task.meta if task else None
    return {"doc_id": doc_id(d.rel_path), "path": d.rel_path, "domain": d.domain,
            "collection": task.collection if task else "", "version": meta.version if meta else "",
            "acl": sorted(meta.acl) if meta else [], "title": "", "content_hash": d.content_hash,
            "fingerprint": (task_fingerprint(task, d.content_hash) if task
                            else skipped_fingerprint(d.rel_path, d.reason, d.detail)),
            "status": "dead_letter", "n_chunks": 0}


def document_secret_findings(doc) -> list[dict]:
    """The ``secret_findings`` rows of an indexed document (credentials masked in it)."""
    return secret_finding_rows(doc.task.rel_path, doc.task.domain, doc.secret_findings)


def _with_vector(row: dict, vector) -> dict:
    """A row made before embedding, completed with its vector."""
    return {**row, "vector": np.asarray(vector, dtype=np.float32)}


def _content_row_without_vector(a) -> dict:
    row = annotated_row(a, ())
    del row["vector"]
    return row


def staged_schema(name: str, dim: int):
    """Schema of a staged table: the index schema, less the entity vectors the commit adds."""
    schema = T.schema_for(name, dim)
    return schema.remove(schema.get_field_index("vector")) if name == T.ENTITIES else schema


def build_pipeline(p: beam.Pipeline, config: BuildConfig, scan: CorpusScan, *, model_id: str,
                   dim: int, staging: Staging, dead_from_scan=()) -> None:
    """Add the build to ``p``: everything is written under ``staging`` for the commit."""
    tasks = p | "Discover documents" >> beam.Create(list(scan.tasks))
    tasks_by_path = {t.rel_path: t for t in scan.tasks}
    parsed = tasks | "Parse documents" >> ParseDocuments(config)
    docs, dead = parsed.documents, parsed[DEAD_LETTER]
    dead = (dead, p | "Skipped files" >> beam.Create(list(dead_from_scan))) | "All dead letters" >> beam.Flatten()

    def chunk_key_and_text(c):
        text = content_embedding_text(c.path, c.text)
        return embedding_key(model_id, text), text

    # with the in-process runner and a model in a child process, chunk texts are sent ahead so
    # the child embeds while this process annotates (transforms/embed.py, EmbeddingPrefetcher)
    annotated = (docs
                 | "Chunks" >> beam.FlatMap(lambda d: d.chunks)
                 | "Prefetch embeddings" >> PrefetchEmbeddings(config, chunk_key_and_text)
                 | "Annotate chunks" >> AnnotateChunks(config)
                 | "Dedup contents" >> DedupContents())
    nodes = ((docs | "Document nodes" >> beam.FlatMap(lambda d: d.directories),
              tasks | "Folder nodes" >> beam.FlatMap(folder_nodes))
             | "All directory nodes" >> beam.Flatten()
             | "Dedup directories" >> DedupDirectories())
    summarized = (nodes, annotated) | "Summarize directories" >> SummarizeDirectories(config)

    # Steps that need no vectors come first: with the in-process runner the stages run in this
    # order, so they run while the embedding child works through the texts sent ahead.
    # entity rows are staged without vectors: the commit adds them (vdgr_core.indexing.entity_vectors)
    entity_rows, existence = annotated | "Merge entities" >> MergeEntities()
    cooccurrence = annotated | "Co-occurrence" >> CooccurrenceEdges()
    containment = (summarized, annotated) | "Containment" >> ContainmentEdges()
    shards = (annotated
              | "Shard rows" >> beam.Map(_content_row_without_vector)
              | "BM25 shards" >> BuildTantivyShards(config.index))
    document_rows = ((docs | "Document row" >> beam.Map(_document_row),
                      dead | "Dead document row" >> beam.Map(_dead_document_row, tasks_by_path=tasks_by_path))
                     | "All document rows" >> beam.Flatten())

    def content_item(a):
        text = content_embedding_text(a.chunk.path, a.chunk.text)
        # the row travels instead of the AnnotatedChunk: plain values encode faster than dataclasses
        return embedding_key(model_id, text), (text, T.CONTENTS, _content_row_without_vector(a))

    def directory_key_and_text(n):
        text = directory_embedding_text(n)
        return embedding_key(model_id, text), text

    def directory_item(n):
        key, text = directory_key_and_text(n)
        return key, (text, T.DIRECTORIES, n)

    # each distinct text is embedded once and every item that needs it gets its row right there
    embedded = ((annotated | "Content texts" >> beam.Map(content_item),
                 summarized
                 | "Prefetch directory embeddings" >> PrefetchEmbeddings(config, directory_key_and_text)
                 | "Directory texts" >> beam.Map(directory_item))
                | "All texts" >> beam.Flatten()
                | "Embed" >> EmbedRows(config, {T.CONTENTS: _with_vector, T.DIRECTORIES: directory_row}))
    content_rows, directory_rows = embedded[T.CONTENTS], embedded[T.DIRECTORIES]

    # rows of a table may come in parts: each part is staged under the table's prefix (no Flatten)
    outputs = {
        T.DOCUMENTS: [document_rows],
        T.DIRECTORIES: [directory_rows],
        T.CONTENTS: [content_rows],
        T.ENTITIES: [entity_rows],
        T.EDGES: [existence, cooccurrence, containment],
        T.DEAD_LETTERS: [dead | "Dead letter row" >> beam.Map(dead_letter_row)],
        T.SECRET_FINDINGS: [docs | "Secret finding rows" >> beam.FlatMap(document_secret_findings)],
        T.EMBEDDING_CACHE: [embedded[NEW_VECTORS]],
    }
    staged = [rows | f"Stage {name} {i}" >> StageParquet(staging.prefix(name), staged_schema(name, dim))
              for name, parts in outputs.items() for i, rows in enumerate(parts)]
    staged.append(shards | "Stage shard list" >> StageLines(staging.prefix("shards")))
    # one step publishes every staged file once all bundles have committed
    _ = staged | "All staged files" >> beam.Flatten() | "Publish staged files" >> PublishStagedFiles()


__all__ = ["build_pipeline"]
