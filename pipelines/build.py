"""The full build: corpus folder -> H2KG tables + BM25 sub-shards, committed under one manifest.

Graph of the pipeline (each box a composite PTransform from ``transforms/``)::

    task manifest files -> ReadTasks -> ParseDocuments -> AnnotateDocuments ---------------+
      per document, no shuffle: content rows -> EmbedInBatches -> content fragments (per   |
        domain and BM25 sub-shard) -> BuildSubShards (reads its fragments)                 |
        has_entity and section -> chunk edges -> edge fragments (per domain)               |
      MergeEntities: per-document partials + chunk vectors, one combine per entity         |
      CooccurrenceEdges: one combine per entity pair                                        |
      SummarizeDirectoriesByLevel: documents grouped by document node, then folders level   |
        by level; each part -> EmbedInBatches -> directory fragments, and its directory -> |
        directory edges, in the stage that produced it                                      |
    contents, directories, entities, edges fragments -> BuildLayouts (one worker a domain)
    every staged record -> PublishStaged (one step: staged.json) -> commit (driver)

``embed_last`` (the in-process runner, which runs one stage at a time): the content embedding
waits for the last summarization step, and the directory embedding for the entity merge and the
BM25 shards (empty side inputs, :func:`after`). The steps that need only text then run while
the embedding child works through the chunk texts sent ahead during the parse, and the entity
merge and BM25 while it embeds the directory texts, sent ahead as they were summarized.

What crosses a shuffle: per-entity and per-pair accumulators, document section trees with chunk
summaries, one small record per folder child, the embedding cache's new vectors (one per key),
and fragment names. Rows are written by the workers that make them, as Lance fragments of
bounded size where the index lives; BM25 sub-shards and each domain's query layout are built by
workers from the fragments; the driver's commit only names them (vdgr_core/store/writer.py).
"""
from __future__ import annotations

import functools
from collections import Counter

import apache_beam as beam
import numpy as np

from pipelines.staging import Staging
from schemas import tables as T
from schemas.config import BuildConfig, StoreConfig
from transforms.bm25 import BuildSubShards
from transforms.directories import SummarizeDirectoriesByLevel, containment_edge
from transforms.documents import SKIPPED, AnnotateDocuments, ReadTasks
from transforms.embed import NEW_VECTORS, EmbedInBatches, PrefetchEmbeddings
from transforms.merge import ENTITY_STATS, CooccurrenceEdges, MergeEntities
from transforms.layouts import BuildLayouts
from transforms.parse import DEAD_LETTER, ParseDocuments
from transforms.write import CountRows, PublishStaged, WriteFragments
from vdgr_core.chunking import folder_nodes
from vdgr_core.corpus import CorpusScan
from vdgr_core.embedding import embedding_key
from vdgr_core.ids import doc_id
from vdgr_core.indexing.domain_facts import DomainFacts
from vdgr_core.indexing.fingerprint import skipped_fingerprint, task_fingerprint
from vdgr_core.indexing.per_document import (content_row_without_vector, document_edges, document_row,
                                             document_tree)
from vdgr_core.indexing.rows import (content_embedding_text, dead_letter_row, directory_embedding_text,
                                     directory_row, secret_finding_rows)
from vdgr_core.store.layout_build import layout_options
from vdgr_core.store.tantivy_shard import subshard_count, subshard_of

# rows per fragment a worker writes (bounded memory per worker; a few MB each)
MAX_ROWS = {T.EDGES: 16384, T.DOCUMENTS: 16384, T.DEAD_LETTERS: 16384, T.SECRET_FINDINGS: 16384,
            T.EMBEDDING_CACHE: 8192}


def dead_document_row(dead, task) -> dict:
    """The documents-table row of a file that became a dead letter (``task`` None: skipped by
    the scan)."""
    meta = task.meta if task else None
    return {"doc_id": doc_id(dead.rel_path), "path": dead.rel_path, "domain": dead.domain,
            "collection": task.collection if task else "", "version": meta.version if meta else "",
            "acl": sorted(meta.acl) if meta else [], "title": "", "content_hash": dead.content_hash,
            "fingerprint": (task_fingerprint(task, dead.content_hash) if task
                            else skipped_fingerprint(dead.rel_path, dead.reason, dead.detail)),
            "status": "dead_letter", "n_chunks": 0}


def document_secret_findings(doc) -> list[dict]:
    """The ``secret_findings`` rows of an indexed document (credentials masked in it)."""
    return secret_finding_rows(doc.task.rel_path, doc.task.domain, doc.secret_findings)


def with_vector(row: dict, vector) -> dict:
    """A row made before embedding, completed with its vector."""
    return {**row, "vector": np.asarray(vector, dtype=np.float32)}


def subshards_per_domain(scan: CorpusScan, store: StoreConfig) -> dict[str, int]:
    """BM25 sub-shards of each domain, from its number of documents (known from the scan)."""
    docs = Counter(t.domain for t in scan.tasks)
    return {d: subshard_count(n, store.bm25_subshard_max_documents) for d, n in sorted(docs.items())}


def max_folder_level(scan: CorpusScan) -> int:
    return max((len(t.folder_titles) for t in scan.tasks), default=0)


class ContentPartition:
    """Content row -> (domain, BM25 sub-shard, within its ACL partition): the staged file it goes to."""

    def __init__(self, subshards: dict[str, int]):
        self._subshards = subshards

    def __call__(self, row) -> tuple[str, int]:
        return row["domain"], subshard_of(row["source"], self._subshards.get(row["domain"], 1), row["acl"])


def chunk_texts(doc, model_id: str):
    """(embedding key, text) of each chunk of a parsed document: what its content rows embed."""
    for c in doc.chunks:
        text = content_embedding_text(c.path, c.text)
        yield embedding_key(model_id, text), text


def content_items(adoc, model_id: str):
    """(embedding key, text, row without vector) of each chunk of an annotated document."""
    for a in adoc.chunks:
        text = content_embedding_text(a.chunk.path, a.chunk.text)
        yield embedding_key(model_id, text), text, content_row_without_vector(a)


def after(pcoll, label: str, *done):
    """``pcoll`` unchanged, read in a stage that runs once the stages that made each of ``done``
    have finished (an empty side input from each: a stage-order constraint, no data)."""
    signals = [beam.pvalue.AsList(d | f"{label}: signal {i}" >> beam.Filter(_never)) for i, d in enumerate(done)]
    return pcoll | label >> beam.Map(_unchanged, *signals)


def _never(_element) -> bool:
    return False


def _unchanged(element, *_signals):
    return element


def build_pipeline(p: beam.Pipeline, config: BuildConfig, scan: CorpusScan, *, model_id: str,
                   dim: int, staging: Staging, dead_from_scan=(), embed_last: bool = False) -> None:
    """Add the build to ``p``: every table's rows written as fragments of the index at
    ``config.index``, the BM25 sub-shards and layouts published, and their list staged under
    ``staging`` for the commit.

    ``embed_last``: the embedding steps wait for the steps that do not need their vectors (see
    the module docstring); for runners that run one stage at a time. Rows are the same either way.
    """
    slices = config.slices
    read = p | "Tasks" >> ReadTasks(staging.write_tasks(scan, dead_from_scan))
    tasks = read.tasks
    parsed = tasks | "Parse documents" >> ParseDocuments(slices.parse)

    # with the in-process runner and a model in a child process, chunk texts are sent ahead so
    # the child embeds while this process annotates (transforms/embed.py, EmbeddingPrefetcher)
    annotated = (parsed.documents
                 | "Prefetch embeddings" >> PrefetchEmbeddings(slices.embed,
                                                                functools.partial(chunk_texts, model_id=model_id))
                 | "Annotate documents" >> AnnotateDocuments(slices.annotate))
    cooccurrence = annotated | "Co-occurrence" >> CooccurrenceEdges()
    trees = annotated | "Document trees" >> beam.Map(document_tree)
    # one part per summarization step: each is embedded and staged where it is produced
    directory_parts = ((trees, tasks | "Folder nodes" >> beam.FlatMap(folder_nodes))
                       | "Summarize directories" >> SummarizeDirectoriesByLevel(slices.summaries, max_folder_level(scan)))

    def directory_items(n):
        text = directory_embedding_text(n)
        return embedding_key(model_id, text), text, n

    def in_order(pcoll, label, *done):
        return after(pcoll, label, *done) if embed_last else pcoll

    content_texts = annotated | "Content texts" >> beam.FlatMap(content_items, model_id=model_id)
    embedded = (in_order(content_texts, "After summaries", directory_parts[-1])
                | "Embed contents" >> EmbedInBatches(slices.embed, with_vector))
    content_rows = embedded.rows
    merged = (annotated, content_rows) | "Merge entities" >> MergeEntities(dim)
    content_fragments = content_rows | "Write contents" >> WriteFragments(
        config.index, T.CONTENTS, T.schema_for(T.CONTENTS, dim),
        partition=ContentPartition(subshards_per_domain(scan, slices.store)), max_rows=2048,
        facts=DomainFacts.of_contents)
    shards = content_fragments | "BM25 sub-shards" >> BuildSubShards(config.index)

    directory_embedded = [in_order(part | f"Prefetch directory embeddings {i}" >> PrefetchEmbeddings(
                                       slices.embed, lambda n: [directory_items(n)[:2]]),
                                   f"After entities and BM25 {i}", merged.entities, shards)
                          | f"Directory texts {i}" >> beam.Map(directory_items)
                          | f"Embed directories {i}" >> EmbedInBatches(slices.embed, directory_row)
                          for i, part in enumerate(directory_parts)]
    dead = ((parsed[DEAD_LETTER],
             read[SKIPPED] | "Skipped files" >> beam.Map(lambda d: (d, None)))
            | "All dead letters" >> beam.Flatten())
    outputs = _table_rows(annotated, dead, cooccurrence, merged, directory_parts, directory_embedded)
    written = _write_tables(outputs, config.index, dim)
    # each domain's layout, from the fragments of its rows, once they are all written
    layouts = ([content_fragments, *(r for name in BY_DOMAIN for r in written[name])]
               | "Layout fragments" >> beam.Flatten()
               | "Domain layouts" >> BuildLayouts(config.index, dim, layout_options(slices.store)))
    cache = _write_new_vectors([embedded, *directory_embedded], config.index, dim)
    counts = CountRows.of({T.CONTENTS: [content_rows], **outputs})
    # one step publishes every record once all bundles (and the shard and layout builds) are done,
    # and only if every table's writers wrote the rows counted beside them
    _ = ([*(r for rs in written.values() for r in rs), content_fragments, shards, layouts, cache, counts]
         | "All staged records" >> beam.Flatten()
         | "Publish staged" >> PublishStaged(staging.root))


def _table_rows(annotated, dead, cooccurrence, merged, directory_parts, directory_embedded) -> dict[str, list]:
    """Each table's row collections (besides contents): table name -> PCollections of rows."""
    return {
        T.DOCUMENTS: [annotated | "Document row" >> beam.Map(lambda a: document_row(a.doc)),
                      dead | "Dead document row" >> beam.MapTuple(dead_document_row)],
        T.DIRECTORIES: [e.rows for e in directory_embedded],
        T.ENTITIES: [merged.entities],
        T.ENTITY_STATS: [merged[ENTITY_STATS]],
        T.EDGES: [annotated | "Document edges" >> beam.FlatMap(document_edges),
                  cooccurrence,
                  *(part | f"Directory edges {i}" >> beam.FlatMap(containment_edge)
                    for i, part in enumerate(directory_parts))],
        T.DEAD_LETTERS: [dead | "Dead letter row" >> beam.MapTuple(lambda d, _t: dead_letter_row(d))],
        T.SECRET_FINDINGS: [annotated | "Secret finding rows" >> beam.FlatMap(lambda a: document_secret_findings(a.doc))],
    }


def _write_tables(outputs: dict[str, list], index: str, dim: int) -> dict[str, list]:
    """Write every collection of ``outputs`` as fragments of its table (by domain for the tables
    layouts are built from; the rows of :data:`GATHERED` tables gathered by domain first, see
    :func:`_gathered_by_domain`); table name -> the staged records of each."""
    def write(rows, name: str, label: str):
        return rows | label >> WriteFragments(
            index, name, T.schema_for(name, dim), max_rows=MAX_ROWS.get(name, 4096),
            partition=_by_domain if name in BY_DOMAIN else None,
            facts=DomainFacts.of_documents if name == T.DOCUMENTS else None)

    return {name: ([write(_gathered_by_domain(parts, name), name, f"Write {name}")] if name in GATHERED
                   else [write(rows, name, f"Write {name} {i}") for i, rows in enumerate(parts)])
            for name, parts in outputs.items()}


def _gathered_by_domain(parts: list, name: str):
    """The rows of ``parts`` (one table's collections) gathered by domain, so that a domain's rows
    make a few large fragments instead of one small one per source step, bundle and domain (265
    edge fragments at 10k chunks on two worker pools, each read again by every scalar index
    segment and by the domain's layout: most of an S3 build's requests). The rows counted beside
    the writers are counted before this step: a row lost in the grouping fails the build."""
    return (parts
            | f"All {name} rows" >> beam.Flatten()
            | f"Key {name} by domain" >> beam.Map(lambda r: (r["domain"], r))
            | f"Gather {name} by domain" >> beam.GroupByKey()
            | f"{name} of a domain" >> beam.FlatMap(lambda kv: kv[1]))


def _write_new_vectors(embedded: list, index: str, dim: int):
    """Write the vectors new to the embedding cache that the embedding steps ``embedded``
    computed: one row per key (two bundles may embed one text)."""
    return ([e[NEW_VECTORS] for e in embedded]
            | "New vectors" >> beam.Flatten()
            | "Key vectors" >> beam.Map(lambda r: (r["key"], r))
            | "One vector a key" >> beam.CombinePerKey(_first)
            | "Cache rows" >> beam.Values()
            | "Write embedding cache" >> WriteFragments(index, T.EMBEDDING_CACHE, T.embedding_cache_schema(dim),
                                                        max_rows=MAX_ROWS[T.EMBEDDING_CACHE], digest=False,
                                                        replace=False))


#: tables whose rows a domain's layout is built from besides contents: written by domain
BY_DOMAIN = (T.DIRECTORIES, T.ENTITIES, T.EDGES)
#: of those, the tables whose rows are gathered by domain before they are written. Not the
#: directories: gathered too, 2 of 5 100k builds on two worker pools lost some of their rows
#: (rows with vectors, from the embedding step's bundle ends; docs/DECISIONS.md)
GATHERED = (T.ENTITIES, T.EDGES)


def _by_domain(row) -> tuple[str]:
    return (row["domain"],)


def _first(rows):
    """One of equal rows (the vectors of one key are equal: the same model and text)."""
    for r in rows:
        return r


__all__ = ["after", "build_pipeline", "chunk_texts", "dead_document_row", "document_secret_findings", "with_vector", "content_items", "ContentPartition",
           "subshards_per_domain", "max_folder_level"]
