"""The full build: corpus folder -> H2KG tables + BM25 shards, committed under one manifest.

Graph of the pipeline (each box a composite PTransform from ``transforms/``)::

    tasks -> ParseDocuments -+-> chunks -> AnnotateChunks -> DedupContents --+
                             |                                               |
                             +-> directories + folders -> DedupDirectories --+-> SummarizeDirectories
                             +-> dead letters                                |
    contents + directories -> EmbedTexts (cached) -> rows -> staged Parquet -> commit (driver)
    annotated -> MergeEntities / CooccurrenceEdges / ContainmentEdges -> edges
    (entity vectors are added at commit from the has_entity edges and content vectors)
"""
from __future__ import annotations


import apache_beam as beam

from pipelines.staging import Staging
from schemas import tables as T
from schemas.config import BuildConfig
from transforms.annotate import AnnotateChunks
from transforms.directories import ContainmentEdges, SummarizeDirectories
from transforms.embed import NEW_VECTORS, EmbedTexts
from transforms.merge import CooccurrenceEdges, DedupContents, DedupDirectories, MergeEntities
from transforms.parse import DEAD_LETTER, ParseDocuments
from transforms.write import BuildTantivyShards, WriteStagedTable
from vdgr_core.chunking import folder_nodes
from vdgr_core.corpus import CorpusScan
from vdgr_core.embedding import embedding_key
from vdgr_core.ids import doc_id
from vdgr_core.indexing.fingerprint import skipped_fingerprint, task_fingerprint
from vdgr_core.indexing.rows import (annotated_row, content_embedding_text, dead_letter_row,
                                     directory_embedding_text, directory_row)


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
            "fingerprint": task_fingerprint(task, d.content_hash) if task else skipped_fingerprint(d.rel_path),
            "status": "dead_letter", "n_chunks": 0}


def _join_vectors(kv, make_row):
    _key, grouped = kv
    vectors = list(grouped["vector"])
    for item in grouped["item"]:
        yield make_row(item, vectors[0])


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

    annotated = (docs
                 | "Chunks" >> beam.FlatMap(lambda d: d.chunks)
                 | "Annotate chunks" >> AnnotateChunks(config)
                 | "Dedup contents" >> DedupContents())
    nodes = ((docs | "Document nodes" >> beam.FlatMap(lambda d: d.directories),
              tasks | "Folder nodes" >> beam.FlatMap(folder_nodes))
             | "All directory nodes" >> beam.Flatten()
             | "Dedup directories" >> DedupDirectories())
    summarized = (nodes, annotated) | "Summarize directories" >> SummarizeDirectories(config)

    def content_key(a):
        return embedding_key(model_id, content_embedding_text(a.chunk.path, a.chunk.text))

    def dir_key(n):
        return embedding_key(model_id, directory_embedding_text(n))

    to_embed = ((annotated | "Content texts" >> beam.Map(
                    lambda a: (content_key(a), content_embedding_text(a.chunk.path, a.chunk.text))),
                 summarized | "Directory texts" >> beam.Map(
                    lambda n: (dir_key(n), directory_embedding_text(n))))
                | "All texts" >> beam.Flatten())
    embedded = to_embed | "Embed" >> EmbedTexts(config)
    vectors = embedded.vectors

    content_rows = ({"item": annotated | "Key content" >> beam.Map(lambda a: (content_key(a), a)),
                     "vector": vectors}
                    | "Join content vectors" >> beam.CoGroupByKey()
                    | "Content row" >> beam.FlatMap(_join_vectors, make_row=annotated_row))
    directory_rows = ({"item": summarized | "Key directory" >> beam.Map(lambda n: (dir_key(n), n)),
                       "vector": vectors}
                      | "Join directory vectors" >> beam.CoGroupByKey()
                      | "Directory row" >> beam.FlatMap(_join_vectors, make_row=directory_row))

    # entity rows are staged without vectors: the commit adds them (vdgr_core.indexing.entity_vectors)
    entity_rows, existence = annotated | "Merge entities" >> MergeEntities()
    cooccurrence = annotated | "Co-occurrence" >> CooccurrenceEdges()
    containment = (summarized, annotated) | "Containment" >> ContainmentEdges()
    edges = (existence, cooccurrence, containment) | "All edges" >> beam.Flatten()

    document_rows = ((docs | "Document row" >> beam.Map(_document_row),
                      dead | "Dead document row" >> beam.Map(_dead_document_row, tasks_by_path=tasks_by_path))
                     | "All document rows" >> beam.Flatten())
    outputs = {
        T.DOCUMENTS: document_rows,
        T.DIRECTORIES: directory_rows,
        T.CONTENTS: content_rows,
        T.ENTITIES: entity_rows,
        T.EDGES: edges,
        T.DEAD_LETTERS: dead | "Dead letter row" >> beam.Map(dead_letter_row),
        T.EMBEDDING_CACHE: embedded[NEW_VECTORS],
    }
    for name, rows in outputs.items():
        _ = rows | f"Stage {name}" >> WriteStagedTable(staging.prefix(name), staged_schema(name, dim))
    shards = content_rows | "BM25 shards" >> BuildTantivyShards(config.index)
    _ = shards | "Stage shard list" >> beam.io.WriteToText(staging.prefix("shards"), file_name_suffix=".jsonl")


__all__ = ["build_pipeline"]
