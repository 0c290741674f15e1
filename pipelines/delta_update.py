"""Document-level incremental update: the arriving documents through Beam, the rest from the index.

Steps (each row kind recomputed as the full build computes it, see vdgr_core/indexing/domain_delta):

1. the arriving documents (added, changed, moved in) run through ``changed_documents_pipeline``:
   parse, chunk, annotate, embed (cached), staged;
2. the driver drops the rows of the leaving documents (changed, deleted, moved away), adds the
   staged ones, and recomputes for the changed domains only: entities and existence edges from the
   stored ``terms``, co-occurrence weights by subtracting and adding sentence counts, the directory
   nodes the change touches, their summaries and their ancestors' (embedded through the cache),
   containment edges, entity vectors;
3. each changed domain's BM25 shard is a copy of the old one with the leaving chunks deleted and
   the arriving ones added, published under a new folder;
4. ``commit_index`` writes the tables and then the manifest, as a full build does.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from pipelines.build import staged_schema
from pipelines.commit import KeepFromIndex, domain_infos
from pipelines.delta_build import ArrivingRows, process_in_driver
from pipelines.run_build import BuildReport, _counter, config_summary, model_identity, staged_pipeline_run
from pipelines.update_plan import UpdatePlan
from schemas import tables as T
from schemas.config import BuildConfig
from schemas.errors import IndexError_
from vdgr_core.chunking import folder_nodes
from vdgr_core.corpus import CorpusScan
from vdgr_core.embedding import embedding_key
from vdgr_core.indexing import domain_delta as delta
from vdgr_core.indexing.document import process_document, read_bytes_limited
from vdgr_core.indexing.embed_cache import EmbeddingCache, append_to_cache, embed_with_cache
from vdgr_core.indexing.entity_vectors import with_entity_vectors
from vdgr_core.indexing.rows import content_embedding_text, directory_embedding_text, directory_row
from vdgr_core.indexing.tree_summary import llm_directory_summarizer, summarize_tree
from vdgr_core.store.failpoints import failpoint
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.tantivy_shard import update_shard
from vdgr_core.store.writer import commit_index

_log = logging.getLogger("vdgr.update")

_NO_VECTOR = ["chunk_id", "doc_id", "text", "source", "title", "path", "parent_id", "domain", "collection",
              "version", "acl", "position", "page", "n_tokens", "summary", "entities", "terms"]


@dataclass(frozen=True)
class _Change:
    """What leaves and what arrives, by corpus path."""

    leaving: frozenset[str]          # rows of these paths are dropped (changed, deleted, moved away)
    arriving: tuple[str, ...]        # these paths are processed again (added, changed, moved in)
    domains: tuple[str, ...]         # the domains whose graph rows are recomputed

    @classmethod
    def of(cls, plan: UpdatePlan) -> "_Change":
        arriving = tuple(sorted(set(plan.added) | set(plan.changed)))
        return cls(frozenset(set(plan.changed) | set(plan.deleted) | set(arriving)), arriving,
                   tuple(plan.affected_domains))


def _isin(column: pa.ChunkedArray, values) -> pa.ChunkedArray:
    return pc.is_in(column, value_set=pa.array(sorted(values), pa.string()))


def apply_document_delta(config: BuildConfig, reader: IndexReader, plan: UpdatePlan, scan: CorpusScan,
                         beam_args: Sequence[str], say: Callable[[str], None], t0: float) -> BuildReport:
    """Apply ``plan`` to the committed index document by document and commit a new manifest."""
    model_id, dim = model_identity(config)
    change = _Change.of(plan)
    tasks_by_path = {t.rel_path: t for t in scan.tasks}
    skipped = set(scan.skipped)
    sub = CorpusScan(tasks=tuple(tasks_by_path[p] for p in change.arriving if p in tasks_by_path),
                     skipped=tuple(p for p in change.arriving if p in skipped))
    dead_from_scan = [scan.dead_letter(x) for x in sub.skipped]
    stage: dict[str, float] = {"scan_s": time.perf_counter() - t0}
    t1 = time.perf_counter()
    n_arriving = len(sub.tasks) + len(sub.skipped)
    if n_arriving <= config.update_in_driver_max_documents:
        say(f"processing {n_arriving} arriving documents in this process (parse, chunk, annotate)")
        arriving = process_in_driver(config, sub, dead_from_scan, dim)
    else:
        say(f"processing {n_arriving} arriving documents with the pipeline (parse, chunk, annotate, embed)")
        arriving = _run_pipeline(config, sub, dead_from_scan, beam_args, model_id, dim)
    stage["documents_s"] = time.perf_counter() - t1
    failpoint("commit.staged")
    say(f"recomputing the graph of {len(change.domains)} domains from stored rows")
    t2 = time.perf_counter()
    merged = _DomainMerge(config, reader, change, scan, arriving, model_id, dim)
    shards = merged.shards()      # needs no vectors: done while the model may still be loading
    failpoint("commit.shards_published")
    tables = merged.tables()
    stage["merge_s"] = time.perf_counter() - t2
    say("committing tables and manifest")
    t3 = time.perf_counter()
    append_to_cache(config.index, pa.concat_tables([arriving.new_vectors, merged.new_vectors]), dim)
    manifest, writes = commit_index(
        config.index, tables, shards, embedding_model=model_id, dim=dim,
        domains=domain_infos(scan, tables[T.DOCUMENTS], tables[T.CONTENTS]),
        config=config_summary(config), parent_build_id=reader.manifest.build_id)
    stage["commit_s"] = time.perf_counter() - t3
    known = arriving.embeddings_computed >= 0
    return BuildReport(
        manifest=manifest, rows={n: w.rows for n, w in writes.items()},
        dead_letters=writes[T.DEAD_LETTERS].rows, documents_seen=n_arriving,
        embeddings_computed=arriving.embeddings_computed + merged.embeddings_computed if known else -1,
        embeddings_from_cache=arriving.embeddings_from_cache + merged.embeddings_from_cache if known else -1,
        wall_s=time.perf_counter() - t0, stage_s=stage,
        llm_calls=arriving.llm_calls + merged.llm_calls,
        llm_fallbacks=arriving.llm_fallbacks + merged.llm_fallbacks,
        secret_findings=writes[T.SECRET_FINDINGS].rows,
    )


def _run_pipeline(config: BuildConfig, sub: CorpusScan, dead_from_scan, beam_args: Sequence[str],
                  model_id: str, dim: int) -> ArrivingRows:
    """The arriving documents through ``changed_documents_pipeline`` (staged, read back)."""
    from pipelines.delta_build import changed_documents_pipeline, read_staged

    def add_steps(p, staging):
        changed_documents_pipeline(p, config, sub, model_id=model_id, dim=dim, staging=staging,
                                   dead_from_scan=dead_from_scan)

    with staged_pipeline_run(config, beam_args, add_steps, warm_embedder=bool(sub.tasks)) as (staging, result):
        return read_staged(staging, dim, lambda name: _counter(result, name))


class _DomainMerge:
    """The driver's half of an update: old rows + arriving rows -> the tables of the new index."""

    def __init__(self, config: BuildConfig, reader: IndexReader, change: _Change, scan: CorpusScan,
                 arriving: ArrivingRows, model_id: str, dim: int):
        self._config, self._reader, self._change, self._scan = config, reader, change, scan
        self._arriving = arriving
        self._model_id, self._dim = model_id, dim
        self.llm_calls = self.llm_fallbacks = 0
        self.embeddings_computed = self.embeddings_from_cache = 0
        self.new_vectors = pa.Table.from_pylist([], schema=T.embedding_cache_schema(dim))
        with ThreadPoolExecutor(max_workers=len(T.TABLES)) as pool:   # LanceDB reads release the GIL
            self._old = {name: T.conform(table, T.schema_for(name, dim))   # an older index: new columns null
                         for name, table in zip(T.TABLES, pool.map(reader.arrow, T.TABLES))}
        old = self._old[T.CONTENTS]
        kept = old.filter(pc.invert(_isin(old.column("source"), change.leaving)))
        self._kept_domain_contents = kept.filter(_isin(kept.column("domain"), change.domains))
        self._kept_contents = kept
        self._leaving_rows = old.filter(_isin(old.column("source"), change.leaving)).select(_NO_VECTOR).to_pylist()
        self._arriving_rows = arriving.contents.select(_NO_VECTOR).to_pylist()
        self._domain_rows = self._kept_domain_contents.select(_NO_VECTOR).to_pylist() + self._arriving_rows

    def _replace_rows(self, name: str, path_column: str, arriving: pa.Table) -> pa.Table:
        old = self._old[name]
        schema = T.schema_for(name, self._dim)
        kept = old.filter(pc.invert(_isin(old.column(path_column), self._change.leaving)))
        return pa.concat_tables([kept.cast(schema), arriving.cast(schema)])

    def _kept(self, name: str) -> pa.Table:
        old = self._old[name]
        return old.filter(pc.invert(_isin(old.column("domain"), self._change.domains)))

    def tables(self) -> dict[str, pa.Table]:
        entities, existence = delta.entities_and_existence(self._domain_rows)
        old_edges = self._old[T.EDGES]
        old_cooc = old_edges.filter(pc.and_(_isin(old_edges.column("domain"), self._change.domains),
                                            pc.equal(old_edges.column("kind"), T.COOCCURS)))
        cooc = delta.cooccurrence_after(old_cooc.to_pylist(), self._leaving_rows, self._arriving_rows)
        nodes, redo, kept_directories = self._directories()
        new_edges = pa.Table.from_pylist(
            existence + cooc + delta.containment_edges(nodes, self._domain_rows), schema=T.edges_schema())
        # every text still to embed, in one batch: the arriving chunks (unless the pipeline did)
        # and the directory summaries made again
        arriving_contents, directory_vectors = self._embed(redo)
        schema = T.schema_for(T.DIRECTORIES, self._dim)
        directories = pa.concat_tables([kept_directories.cast(schema), pa.Table.from_pylist(
            [directory_row(n, v) for n, v in zip(redo, directory_vectors)], schema=schema)])
        contents_schema = T.schema_for(T.CONTENTS, self._dim)
        domain_contents = pa.concat_tables([self._kept_domain_contents.cast(contents_schema), arriving_contents])
        entity_table = with_entity_vectors(
            pa.Table.from_pylist(entities, schema=staged_schema(T.ENTITIES, self._dim)),
            new_edges, domain_contents, self._dim)
        return {
            T.DOCUMENTS: self._replace_rows(T.DOCUMENTS, "path", self._arriving.documents),
            T.DEAD_LETTERS: self._replace_rows(T.DEAD_LETTERS, "path", self._arriving.dead_letters),
            T.SECRET_FINDINGS: self._replace_rows(T.SECRET_FINDINGS, "path", self._arriving.secret_findings),
            T.CONTENTS: pa.concat_tables([self._kept_contents.cast(contents_schema), arriving_contents]),
            T.DIRECTORIES: directories,
            T.ENTITIES: pa.concat_tables([self._kept(T.ENTITIES).cast(entity_table.schema), entity_table]),
            T.EDGES: pa.concat_tables([self._kept(T.EDGES).cast(T.edges_schema()), new_edges]),
        }

    def _embed(self, redo_nodes) -> tuple[pa.Table, np.ndarray]:
        """(arriving contents with vectors, vectors of ``redo_nodes``), embedded through the cache."""
        items = []
        if not self._arriving.embedded:
            items = [content_embedding_text(r["path"], r["text"]) for r in self._arriving_rows]
        n_contents = len(items)
        items += [directory_embedding_text(n) for n in redo_nodes]
        from transforms.embed import process_embedder

        batch = embed_with_cache(lambda: process_embedder(self._config.embedding), self._dim,
                                 EmbeddingCache(self._config.index),
                                 [(embedding_key(self._model_id, t), t) for t in items])
        self.embeddings_computed = sum(batch.computed)
        self.embeddings_from_cache = len(items) - self.embeddings_computed
        self.new_vectors = pa.Table.from_pylist(
            [{"key": k, "vector": v} for k, v, c in zip(batch.keys, batch.vectors, batch.computed) if c],
            schema=T.embedding_cache_schema(self._dim))
        contents = self._arriving.contents
        if not self._arriving.embedded:
            flat = pa.array(batch.vectors[:n_contents].reshape(-1), pa.float32())
            contents = contents.append_column("vector", pa.FixedSizeListArray.from_arrays(flat, self._dim))
        schema = T.schema_for(T.CONTENTS, self._dim)
        return contents.select(schema.names).cast(schema), batch.vectors[n_contents:]

    def _directories(self):
        """(all nodes of the changed domains, nodes summarized again, stored rows kept as they are)."""
        old = self._old[T.DIRECTORIES]
        old_domain = old.filter(_isin(old.column("domain"), self._change.domains))
        old_nodes = [delta.node_from_row(r) for r in old_domain.drop_columns(["vector"]).to_pylist()]
        folders = [n for t in self._scan.tasks if t.domain in self._change.domains for n in folder_nodes(t)]
        arriving = [delta.node_from_row(dict(r, summary="")) for r in self._arriving.nodes.to_pylist()]
        merge = delta.merge_nodes_after(old_nodes, self._change.leaving, arriving, folders, self._parse_sources)
        seeds = (set(merge.touched) - merge.removed) | merge.old_parents
        seeds |= {r["parent_id"] for r in self._leaving_rows + self._arriving_rows}
        only = delta.nodes_to_summarize(merge.nodes, seeds)
        summarized = summarize_tree(merge.nodes, delta.chunk_summaries(self._domain_rows), self._summarizer(),
                                    max_chars=self._config.summary_max_chars + 200, only=only)
        redo = [n for n in summarized if n.node_id in only]
        unchanged = {n.node_id for n in summarized} - only
        kept = pa.concat_tables([self._kept(T.DIRECTORIES),
                                 old_domain.filter(_isin(old_domain.column("node_id"), unchanged))])
        return summarized, redo, kept

    def _parse_sources(self, paths: Sequence[str]) -> dict:
        """Directory nodes of unchanged documents that share a node with a changed one."""
        tasks = {t.rel_path: t for t in self._scan.tasks}
        out = {}
        for rel in paths:
            task = tasks.get(rel)
            if task is None:
                raise IndexError_(f"{rel!r} is in the index but not in the corpus scan")
            data = read_bytes_limited(FileSystems.open, FileSystems.join(task.corpus_root, *rel.split("/")),
                                      self._config.limits.max_file_bytes)
            out[rel] = process_document(task, data, self._config).directories
        return out

    def _summarizer(self):
        if self._config.llm is None:
            return None
        from vdgr_core.llm.client import LLMClient

        client = LLMClient(self._config.llm)

        def on_fallback(title: str, reason: str) -> None:
            self.llm_fallbacks += 1
            _log.warning("LLM summary failed for directory %r; extractive summary used: %s", title, reason)

        summarize = llm_directory_summarizer(client, max_chars=self._config.summary_max_chars + 200,
                                             on_fallback=on_fallback)

        def counted(*args):
            before = client.total_calls()
            try:
                return summarize(*args)
            finally:
                self.llm_calls += client.total_calls() - before

        return counted

    def shards(self):
        old_shards = KeepFromIndex(self._reader, self._change.domains).kept_shards()
        by_domain: dict[str, list[dict]] = {}
        for r in self._domain_rows:
            by_domain.setdefault(r["domain"], []).append(r)
        leaving = {}
        for r in self._leaving_rows:
            leaving.setdefault(r["domain"], set()).add(r["chunk_id"])
        arriving = {}
        for r in self._arriving_rows:
            arriving.setdefault(r["domain"], []).append(r)
        base = self._reader.manifest.tantivy_shards
        new = [update_shard(self._config.index, d, base.get(d), by_domain[d], leaving.get(d, ()),
                            arriving.get(d, ())) for d in self._change.domains if by_domain.get(d)]
        return sorted(old_shards + new, key=lambda s: s.domain)


__all__ = ["apply_document_delta"]
