"""Row-level incremental update: only the rows a change touches are read and rewritten.

1. The arriving documents (added, changed, moved in) are parsed, chunked, annotated and embedded
   by the build's functions: in this process for a small change, by the Beam pipeline
   (``changed_documents_pipeline``) for a large one.
2. The rows of the leaving documents (changed, deleted, moved away) are read by a filter on their
   paths; from them and the arriving rows, ``vdgr_core/indexing/row_delta.py`` derives what
   changes: their content, document, dead-letter and edge rows; the co-occurrence weights of the
   entity pairs they hold; the statistics and vectors of the entities they mention (stored in
   ``entity_stats``: subtract, add); the directory nodes they produce or shared, and the
   summaries of those nodes, of the sections whose chunks changed, and of their ancestors.
   Entity importance depends on a domain's chunk count, so when that count changes every
   entity row of the domain gets its new importance (computed from the row itself).
3. Each table gets one delete (by key) and one append in LanceDB; every other row stays where it
   is. Readers pinned to the previous manifest keep their versions.
4. The BM25 sub-shards holding leaving or arriving documents are copied with those chunks
   deleted and added; the query layouts of the changed domains (vdgr_core/store/domain_layout.py)
   are written again from their committed rows.
5. The per-domain digests in the manifest are updated by subtracting the hashes of the rows
   deleted and adding those of the rows written; the manifest is written last.

The result equals a full rebuild of the new corpus (tests/pipelines/test_update_property.py).
"""
from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems
from lancedb.expr import col

from pipelines.build import subshards_per_domain
from pipelines.delta_build import ArrivingRows, process_in_driver
from pipelines.metrics import beam_counter
from pipelines.run_build import BuildReport, model_identity, staged_pipeline_run
from pipelines.update_plan import UpdatePlan
from schemas import tables as T
from schemas.config import BuildConfig
from schemas.errors import IndexError_
from vdgr_core.chunking import folder_nodes
from vdgr_core.corpus import CorpusScan
from vdgr_core.embedding import embedding_key
from vdgr_core.indexing import domain_delta as delta
from vdgr_core.indexing import row_delta
from vdgr_core.indexing.document import process_document, read_bytes_limited
from vdgr_core.indexing.domain_facts import DomainFacts, descriptions
from vdgr_core.indexing.embed_cache import EmbeddingCache, embed_with_cache, new_cache_rows
from vdgr_core.indexing.entity_merge import EntityStats, entity_row, stats_from_row, stats_row
from vdgr_core.indexing.rows import content_embedding_text, directory_embedding_text, directory_row, edge_row
from vdgr_core.indexing.tree_summary import llm_directory_summarizer
from vdgr_core.entities import entity_importance
from vdgr_core.ids import edge_id, entity_id
from vdgr_core.memory import release_unused_memory
from vdgr_core.progress import plural, reporting
from vdgr_core.store import digest as dg
from vdgr_core.store.failpoints import failpoint
from vdgr_core.store.fragments import write_fragments
from vdgr_core.store.domain_layout import FORMAT as LAYOUT_FORMAT
from vdgr_core.store.domain_layout import DomainLayout, layout_format
from vdgr_core.store.layout_build import layout_options, write_layouts
from vdgr_core.store.layout_rows import DomainDelta
from vdgr_core.store.manifest import CommitGuard, DomainInfo, Manifest
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.tantivy_shard import (SHARD_COLUMNS, ShardInfo, build_shard, subshard_of,
                                           update_shard)
from vdgr_core.store.table_indexes import build_segments_here
from vdgr_core.store.writer import CommitPlan, SegmentBuilder, TableChange, UpdateWrites, commit

_log = logging.getLogger("vdgr.update")
_IN_CHUNK = 4000         # values per IN (...) filter
_NO_VECTOR = ["chunk_id", "doc_id", "text", "source", "title", "path", "parent_id", "domain", "collection",
              "version", "acl", "position", "page", "n_tokens", "summary", "entities", "terms"]


@dataclass(frozen=True)
class _Change:
    """What leaves and what arrives, by corpus path."""

    leaving: frozenset[str]          # rows of these paths are dropped (changed, deleted, moved away)
    arriving: tuple[str, ...]        # these paths are processed again (added, changed, moved in)
    domains: tuple[str, ...]         # the domains the change touches

    @classmethod
    def of(cls, plan: UpdatePlan) -> "_Change":
        arriving = tuple(sorted(set(plan.added) | set(plan.changed)))
        return cls(frozenset(set(plan.changed) | set(plan.deleted) | set(arriving)), arriving,
                   tuple(plan.affected_domains))


@dataclass
class _RowChange:
    """One table's part of the update: rows deleted (by ``key`` in ``keys``) and rows added."""

    key: str
    keys: list[str]
    deleted: pa.Table
    added: pa.Table


class _Stored:
    """Reads of the committed (pinned) tables by typed filters, in bounded IN-lists."""

    def __init__(self, reader: IndexReader):
        self._reader = reader

    def where_in(self, name: str, column: str, values: Iterable[str], columns: Optional[Sequence[str]] = None,
                 also=None) -> pa.Table:
        values = sorted(set(values))
        table = self._reader.table(name)
        schema = table.schema if columns is None else pa.schema([table.schema.field(c) for c in columns])
        parts = []
        for start in range(0, len(values), _IN_CHUNK):
            expr = col(column).isin(values[start:start + _IN_CHUNK])
            if also is not None:
                expr = expr & also
            q = table.search().where(expr)
            if columns is not None:
                q = q.select(list(columns))
            parts.append(q.to_arrow().select(schema.names))
        return pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()

    def where_array_has_any(self, name: str, column: str, values: Iterable[str], columns: Sequence[str]) -> pa.Table:
        """Rows whose list column ``column`` holds any of ``values`` (corpus paths, quoted)."""
        values = sorted(set(values))
        table = self._reader.table(name)
        schema = pa.schema([table.schema.field(c) for c in columns])
        parts = []
        for start in range(0, len(values), _IN_CHUNK):
            quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in values[start:start + _IN_CHUNK])
            parts.append(table.search().where(f"array_has_any({column}, [{quoted}])").select(list(columns))
                         .to_arrow().select(schema.names))
        return pa.concat_tables(parts).cast(schema) if parts else schema.empty_table()


def _row_dicts(contents: pa.Table) -> list[dict]:
    """Content rows as dicts, each ``vector`` a row of one float32 matrix (a list of Python
    floats per row held ~130 MB for the 10k chunks of a 1% update at 1M chunks)."""
    rows = contents.select(_NO_VECTOR).to_pylist()
    vec = contents.column("vector").combine_chunks()
    if len(rows) and vec.null_count == 0:
        matrix = np.asarray(vec.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(rows), -1)
        for r, v in zip(rows, matrix):
            r["vector"] = v
    else:
        for r, v in zip(rows, vec.to_pylist()):
            r["vector"] = v
    return rows


def _rows(name: str, rows: list[dict], dim: int) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=T.schema_for(name, dim))


def apply_document_delta(config: BuildConfig, reader: IndexReader, plan: UpdatePlan, scan: CorpusScan,
                         beam_args: Sequence[str], say: Callable[[str], None], t0: float, *,
                         guard: Optional[CommitGuard]) -> BuildReport:
    """Apply ``plan`` to the committed index row by row and commit a new manifest, checked by
    ``guard`` (the held index lock, see ``write_manifest``)."""
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
    # progress lines while documents are parsed and texts embedded (the row update embeds)
    with reporting(len(sub.tasks), say):
        if n_arriving <= config.update_in_driver_max_documents:
            say(f"processing {plural(n_arriving, 'arriving document')} in this process (parse, chunk, annotate)")
            arriving = process_in_driver(config, sub, dead_from_scan, dim)
        else:
            say(f"processing {plural(n_arriving, 'arriving document')} with the pipeline"
                " (parse, chunk, annotate, embed)")
            arriving = _run_pipeline(config, sub, dead_from_scan, beam_args, model_id, dim)
        stage["documents_s"] = time.perf_counter() - t1
        failpoint("commit.staged")
        say(f"reading the rows the change touches in {plural(len(change.domains), 'domain')}")
        t2 = time.perf_counter()
        update = _RowUpdate(config, reader, change, scan, arriving, model_id, dim)
        changes = update.table_changes()
    release_unused_memory()          # what reading the touched rows freed, before the writes
    stage["merge_s"] = time.perf_counter() - t2
    say("writing changed rows, shards, layouts and manifest")
    t3 = time.perf_counter()
    manifest, writes = update.commit(changes, guard, build_segments_here)
    stage["commit_s"] = time.perf_counter() - t3
    known = arriving.embeddings_computed >= 0
    return BuildReport(
        manifest=manifest, rows=dict(manifest.counts), dead_letters=manifest.counts[T.DEAD_LETTERS],
        documents_seen=n_arriving,
        embeddings_computed=arriving.embeddings_computed + update.embeddings_computed if known else -1,
        embeddings_from_cache=arriving.embeddings_from_cache + update.embeddings_from_cache if known else -1,
        wall_s=time.perf_counter() - t0, stage_s=stage,
        llm_calls=arriving.llm_calls + update.llm_calls,
        llm_fallbacks=arriving.llm_fallbacks + update.llm_fallbacks,
        secret_findings=manifest.counts.get(T.SECRET_FINDINGS, 0),
        update_writes=writes,
    )


def _run_pipeline(config: BuildConfig, sub: CorpusScan, dead_from_scan, beam_args: Sequence[str],
                  model_id: str, dim: int) -> ArrivingRows:
    """The arriving documents through ``changed_documents_pipeline`` (staged, read back)."""
    from pipelines.delta_build import changed_documents_pipeline, read_staged

    def add_steps(p, staging):
        changed_documents_pipeline(p, config, sub, model_id=model_id, dim=dim, staging=staging,
                                   dead_from_scan=dead_from_scan)

    with staged_pipeline_run(config, beam_args, add_steps, warm_embedder=bool(sub.tasks)) as (staging, result):
        return read_staged(staging, dim, lambda name: beam_counter(result, name))


class _Touched:
    """What every delta step reads: the change, the committed tables (by typed filters), the
    leaving and arriving content rows, and each domain's chunk count before and after."""

    def __init__(self, config: BuildConfig, reader: IndexReader, change: _Change, scan: CorpusScan,
                 arriving: ArrivingRows, model_id: str, dim: int):
        self.config, self.reader, self.change, self.scan = config, reader, change, scan
        self.arriving = arriving
        self.model_id, self.dim = model_id, dim
        self.stored = _Stored(reader)
        self.leaving = self.stored.where_in(T.CONTENTS, "source", change.leaving)
        self.leaving_rows = _row_dicts(self.leaving)
        self.arriving_rows = arriving.contents.select(_NO_VECTOR).to_pylist()
        self.n_chunks = {d.name: d.n_chunks for d in reader.manifest.domains}
        delta_chunks = Counter(r["domain"] for r in self.arriving_rows)
        delta_chunks.subtract(Counter(r["domain"] for r in self.leaving_rows))
        self.n_chunks_after = {d: self.n_chunks.get(d, 0) + delta_chunks.get(d, 0)
                               for d in set(self.n_chunks) | set(delta_chunks)}


def _document_rows(t: _Touched, name: str, arriving: pa.Table) -> _RowChange:
    """A table keyed by corpus path (documents, dead letters, secret findings): the leaving
    paths' rows go, the arriving documents' rows come."""
    schema = T.schema_for(name, t.dim)
    deleted = t.stored.where_in(name, "path", t.change.leaving)
    return _RowChange("path", sorted(t.change.leaving), deleted, arriving.select(schema.names).cast(schema))


@dataclass
class _DirectoryChange:
    """The directories step's result: the table change (rows added once embedded), the nodes
    summarized again, and the containment edges that go and come."""

    table: _RowChange
    redo_nodes: list
    edges_gone: list[str]
    edges_new: list[dict]


class _DirectoryDelta:
    """Directories: the nodes the leaving and arriving documents produce or share, merged
    again, and the summaries of those nodes, of the sections whose chunks changed and of their
    ancestors (nothing else); containment edges of every node merged again."""

    def __init__(self, t: _Touched):
        self._t = t
        self.llm_calls = self.llm_fallbacks = 0

    def run(self) -> _DirectoryChange:
        t = self._t
        domains = t.change.domains
        node_cols = [c for c in T.schema_for(T.DIRECTORIES, t.dim).names if c != "vector"]
        of_leaving = t.stored.where_array_has_any(T.DIRECTORIES, "sources", t.change.leaving, node_cols)
        arriving_nodes = [delta.node_from_row(dict(r, summary="")) for r in t.arriving.nodes.to_pylist()]
        by_arriving = t.stored.where_in(T.DIRECTORIES, "node_id", {n.node_id for n in arriving_nodes},
                                        node_cols)
        folders_old = t.stored.where_in(T.DIRECTORIES, "domain", domains, node_cols,
                                        also=col("kind").isin(["folder", "domain"]))
        old_nodes = {r["node_id"]: delta.node_from_row(r)
                     for r in pa.concat_tables([of_leaving, by_arriving, folders_old]).to_pylist()}
        one_per_folder = {task.rel_path.rsplit("/", 1)[0]: task for task in t.scan.tasks if task.domain in domains}
        folders = [n for task in one_per_folder.values() for n in folder_nodes(task)]
        merge = delta.merge_nodes_after(list(old_nodes.values()), t.change.leaving, arriving_nodes, folders,
                                        self._parse_sources)
        merged = {n.node_id: n for n in merge.nodes if n.node_id in merge.touched}
        seeds = (set(merge.touched) - merge.removed) | set(merge.old_parents)
        seeds |= {r["parent_id"] for r in t.leaving_rows + t.arriving_rows}
        nodes, only = self._with_ancestors(seeds, merged, old_nodes, merge.removed)
        # every child of a node summarized again, with its current summary
        kids = t.stored.where_in(T.DIRECTORIES, "parent_id", only,
                                 ["node_id", "parent_id", "title", "summary", "acl", "level", "full_path",
                                  "domain", "collection", "version", "kind", "source", "sources"])
        children: dict[str, set[str]] = defaultdict(set)
        for r in kids.to_pylist():
            if r["node_id"] in merge.removed:
                continue
            nodes.setdefault(r["node_id"], delta.node_from_row(r))
            children[r["parent_id"]].add(r["node_id"])
        for n in merged.values():                       # new or re-merged nodes under their parent
            children[n.parent_id].add(n.node_id)
        for i, n in list(nodes.items()):
            if i in merged:
                nodes[i] = merged[i]
        for parent, ids in children.items():            # a re-merged node may have moved
            children[parent] = {i for i in ids if i in nodes and nodes[i].parent_id == parent}
        own = self._own_chunks(only)
        done = row_delta.resummarize(sorted(only), nodes, {p: sorted(c) for p, c in children.items()}, own,
                                     self._summarizer(), max_chars=t.config.summary_max_chars + 200)
        rewritten = sorted(done.values(), key=lambda n: n.node_id)
        gone_keys = sorted(set(merge.touched) | set(only))
        deleted = t.stored.where_in(T.DIRECTORIES, "node_id", gone_keys)
        # containment edges of every node merged again: the old edge goes, the new one comes
        edges_gone = [edge_id(T.CONTAINS, old_nodes[i].parent_id, i) for i in merge.touched
                      if i in old_nodes and old_nodes[i].parent_id]
        edges_new = [edge_row(T.CONTAINS, n.parent_id, n.node_id, n.domain, 1.0) for n in merged.values()
                     if n.parent_id]
        return _DirectoryChange(_RowChange("node_id", gone_keys, deleted, None), rewritten, edges_gone, edges_new)

    def _with_ancestors(self, seeds, merged, old_nodes, removed):
        """(nodes by id, ids to summarize again): the seeds that exist and all their ancestors."""
        t = self._t
        nodes = {i: n for i, n in old_nodes.items() if i not in removed}
        nodes.update(merged)
        only: set[str] = set()
        frontier = {s for s in seeds if s and s not in removed}
        while frontier:
            missing = sorted(i for i in frontier if i not in nodes)
            if missing:
                for r in t.stored.where_in(T.DIRECTORIES, "node_id", missing, [
                        c for c in T.schema_for(T.DIRECTORIES, t.dim).names if c != "vector"]).to_pylist():
                    nodes[r["node_id"]] = delta.node_from_row(r)
            nxt = set()
            for i in frontier:
                if i in nodes and i not in only:
                    only.add(i)
                    if nodes[i].parent_id:
                        nxt.add(nodes[i].parent_id)
            frontier = nxt - only
        return nodes, only

    def _own_chunks(self, only: set[str]) -> dict[str, list[tuple[int, str, tuple[str, ...]]]]:
        t = self._t
        stored = t.stored.where_in(T.CONTENTS, "parent_id", only,
                                   ["parent_id", "position", "summary", "acl", "source"])
        own: dict[str, list] = defaultdict(list)
        for r in stored.to_pylist():
            if r["source"] not in t.change.leaving:
                own[r["parent_id"]].append((r["position"], r["summary"], tuple(r["acl"] or ())))
        for r in t.arriving_rows:
            if r["parent_id"] in only:
                own[r["parent_id"]].append((r["position"], r["summary"], tuple(r["acl"] or ())))
        return own

    def _parse_sources(self, paths: Sequence[str]) -> dict:
        """Directory nodes of unchanged documents that share a node with a changed one."""
        t = self._t
        tasks = {task.rel_path: task for task in t.scan.tasks}
        out = {}
        for rel in paths:
            task = tasks.get(rel)
            if task is None:
                raise IndexError_(f"{rel!r} is in the index but not in the corpus scan")
            data = read_bytes_limited(FileSystems.open, FileSystems.join(task.corpus_root, *rel.split("/")),
                                      t.config.limits.max_file_bytes)
            out[rel] = process_document(task, data, t.config).directories
        return out

    def _summarizer(self):
        config = self._t.config
        if config.llm is None:
            return None
        from vdgr_core.llm.client import LLMClient

        client = LLMClient(config.llm)

        def on_fallback(title: str, reason: str) -> None:
            self.llm_fallbacks += 1
            _log.warning("LLM summary failed for directory %r; extractive summary used: %s", title, reason)

        summarize = llm_directory_summarizer(client, max_chars=config.summary_max_chars + 200,
                                             on_fallback=on_fallback)

        def counted(*args):
            before = client.total_calls()
            try:
                return summarize(*args)
            finally:
                self.llm_calls += client.total_calls() - before

        return counted


@dataclass
class _Embedded:
    """The embedding step's result: the arriving contents with vectors, the rewritten
    directory rows, the vectors computed (for the cache) and the counts."""

    contents: pa.Table
    directories: pa.Table
    new_vectors: pa.Table
    computed: int
    from_cache: int


def _embed(t: _Touched, redo_nodes: list) -> _Embedded:
    """Every new text in one batch through the cache: the arriving chunks (unless the pipeline
    embedded them) and the directory nodes summarized again."""
    items = []
    if "vector" not in t.arriving.contents.schema.names:
        items = [content_embedding_text(r["path"], r["text"]) for r in t.arriving_rows]
    n_contents = len(items)
    items += [directory_embedding_text(n) for n in redo_nodes]
    from transforms.embed import process_embedder

    batch = embed_with_cache(lambda: process_embedder(t.config.embedding), t.dim,
                             EmbeddingCache(t.config.index),
                             [(embedding_key(t.model_id, text), text) for text in items])
    computed = sum(batch.computed)
    new_vectors = pa.Table.from_pylist(
        [{"key": k, "vector": v} for k, v, c in zip(batch.keys, batch.vectors, batch.computed) if c],
        schema=T.embedding_cache_schema(t.dim))
    contents = t.arriving.contents
    if n_contents or "vector" not in contents.schema.names:
        flat = pa.array(batch.vectors[:n_contents].reshape(-1), pa.float32())
        contents = contents.append_column("vector", pa.FixedSizeListArray.from_arrays(flat, t.dim))
    directories = _rows(T.DIRECTORIES, [directory_row(n, v) for n, v in
                                        zip(redo_nodes, batch.vectors[n_contents:])], t.dim)
    return _Embedded(contents, directories, new_vectors, computed, len(items) - computed)


def _content_change(t: _Touched, arriving_contents: pa.Table) -> _RowChange:
    """Contents: the leaving documents' chunks go, the arriving ones (with vectors) come."""
    schema = T.schema_for(T.CONTENTS, t.dim)
    return _RowChange("source", sorted(t.change.leaving), t.leaving,
                       arriving_contents.select(schema.names).cast(schema))


def _edge_change(t: _Touched, dir_gone: list[str], dir_new: list[dict]) -> _RowChange:
    """Edges: the leaving chunks' ``has_entity`` edges go and the arriving ones' come; each
    co-occurrence pair they hold gets its weight minus the leaving and plus the arriving
    sentence counts; the directories step's containment edges go and come."""
    leaving_pairs = row_delta.pair_weights(t.leaving_rows)
    arriving_pairs = row_delta.pair_weights(t.arriving_rows)
    pair_ids = {row_delta.pair_edge_id(k) for k in set(leaving_pairs) | set(arriving_pairs)}
    gone_ids = ({e["edge_id"] for e in row_delta.content_edges(t.leaving_rows)} | pair_ids | set(dir_gone))
    deleted = t.stored.where_in(T.EDGES, "edge_id", gone_ids)
    old_weights = {(r["domain"], r["src"], r["dst"]): r["weight"]
                   for r in deleted.to_pylist() if r["kind"] == T.COOCCURS}
    added = (row_delta.content_edges(t.arriving_rows)
             + row_delta.pair_edges_after(old_weights, leaving_pairs, arriving_pairs) + dir_new)
    return _RowChange("edge_id", sorted(gone_ids), deleted, _rows(T.EDGES, added, t.dim))


class _EntityDelta:
    """Entities and entity statistics: the mentions of the leaving chunks subtracted and the
    arriving ones' added (``entity_stats``); when a domain's chunk count changes, every entity
    row of that domain gets its new importance."""

    def __init__(self, t: _Touched):
        self._t = t

    def run(self, arriving_contents: pa.Table) -> tuple[_RowChange, _RowChange]:
        t = self._t
        arriving_rows = _row_dicts(arriving_contents)
        minus = row_delta.entity_partials(t.leaving_rows)
        plus = row_delta.entity_partials(arriving_rows)
        affected = {entity_id(d, n): (d, n) for d, n in set(minus) | set(plus)}
        old_stats = t.stored.where_in(T.ENTITY_STATS, "entity_id", affected)
        stats: dict[str, EntityStats] = {r["entity_id"]: stats_from_row(r) for r in old_stats.to_pylist()}
        for key, s in minus.items():
            stats.setdefault(entity_id(*key), EntityStats()).subtract(s)
        for key, s in plus.items():
            stats.setdefault(entity_id(*key), EntityStats()).merge(s)
        stale = [i for i, s in stats.items() if s.best_score_stale and not s.empty]
        if stale:
            self._recompute_best_scores(stale, stats, arriving_rows)
        recount = sorted(d for d in t.change.domains
                         if t.n_chunks_after.get(d, 0) != t.n_chunks.get(d, 0))
        old_entities = t.stored.where_in(T.ENTITIES, "entity_id", affected)
        if recount:
            others = t.stored.where_in(T.ENTITIES, "domain", recount)
            others = others.filter(pc.invert(pc.is_in(others.column("entity_id"),
                                                      value_set=pa.array(sorted(affected), pa.string()))))
            old_entities = pa.concat_tables([old_entities, others])
        new_entities, new_stats = [], []
        for eid, (domain, norm) in sorted(affected.items()):
            s = stats[eid]
            if s.empty:
                continue
            new_entities.append(entity_row(domain, norm, s, t.n_chunks_after.get(domain, 0) or 1, t.dim))
            new_stats.append(stats_row(domain, norm, s, t.dim))
        ent_keys = sorted(set(affected) | set(old_entities.column("entity_id").to_pylist()))
        schema = T.schema_for(T.ENTITIES, t.dim)
        added = pa.concat_tables([_rows(T.ENTITIES, new_entities, t.dim),
                                  self._recounted(old_entities.select(schema.names).cast(schema), affected)])
        return (_RowChange("entity_id", ent_keys, old_entities, added),
                _RowChange("entity_id", sorted(affected), old_stats, _rows(T.ENTITY_STATS, new_stats, t.dim)))

    def _recounted(self, old: pa.Table, affected) -> pa.Table:
        """The stored entity rows this change did not touch, their importance computed for their
        domain's new chunk count (an LLM-scored entity keeps its score); the rows stay Arrow
        columns (their vectors are never turned into Python lists: at 1M chunks that held
        ~450 MB for the 33 domains' entities)."""
        if affected and old.num_rows:
            old = old.filter(pc.invert(pc.is_in(old.column("entity_id"), value_set=pa.array(sorted(affected)))))
        if old.num_rows == 0:
            return old
        n_after = self._t.n_chunks_after
        cols = {c: old.column(c).to_pylist() for c in ("domain", "kind", "frequency", "chunk_frequency",
                                                       "importance")}
        importance = [imp if kind == "llm" else float(entity_importance(
            kind, freq, chunks, n_after.get(domain, 0) or 1)) for domain, kind, freq, chunks, imp in
            zip(cols["domain"], cols["kind"], cols["frequency"], cols["chunk_frequency"], cols["importance"])]
        at = old.schema.get_field_index("importance")
        return old.set_column(at, old.schema.field(at), pa.array(importance, old.schema.field(at).type))

    def _recompute_best_scores(self, ids: list[str], stats, arriving_rows) -> None:
        """Best LLM score of entities whose best mention left: from their remaining mentions."""
        t = self._t
        edges = t.stored.where_in(T.EDGES, "dst", ids, columns=["src", "dst", "kind"],
                                  also=col("kind").eq(T.HAS_ENTITY))
        leaving = {r["chunk_id"] for r in t.leaving_rows}
        chunk_ids = sorted(set(edges.column("src").to_pylist()) - leaving)
        rows = t.stored.where_in(T.CONTENTS, "chunk_id", chunk_ids, columns=["chunk_id", "domain", "terms"])
        best: dict[str, float] = defaultdict(float)
        for r in rows.to_pylist() + arriving_rows:
            for term in r["terms"] or ():
                eid = entity_id(r["domain"], term["norm"])
                if eid in stats and term["kind"] == "llm":
                    best[eid] = max(best[eid], term["score"])
        for eid in ids:
            stats[eid].best_score = best.get(eid, 0.0)
            stats[eid].best_score_stale = False


class _ShardDelta:
    """BM25 sub-shards: each changed domain's sub-shards patched (or rebuilt), and the shards
    of every domain of an older shard schema rebuilt in the current one; the others kept."""

    def __init__(self, t: _Touched):
        self._t = t

    def shards(self, subshards: dict[str, int]) -> list[ShardInfo]:
        t = self._t
        m = t.reader.manifest
        redo = set(t.change.domains) | set(stale_shards(t.reader))
        out = [s for d, shards in m.tantivy_shards.items() if d not in redo for s in shards]
        fields = [*SHARD_COLUMNS, "source"]
        for d in sorted(redo):
            n = subshards.get(d, 1)
            if d not in subshards:
                continue
            old = {s.sub: s for s in m.tantivy_shards.get(d, ())}
            if m.subshards.get(d, 1) != n or any(not s.current for s in old.values()):
                rows = self._stored_domain_rows(d, fields)       # new sub-shard layout or schema: rebuild
                by_sub = defaultdict(list)
                for r in rows:
                    by_sub[subshard_of(r["source"], n, r["acl"])].append(r)
                out += [build_shard(t.config.index, d, rs, sub) for sub, rs in sorted(by_sub.items())]
                continue
            leaving = defaultdict(list)
            for r in t.leaving_rows:
                if r["domain"] == d:
                    leaving[subshard_of(r["source"], n, r["acl"])].append(r)
            arriving = defaultdict(list)
            for r in t.arriving_rows:
                if r["domain"] == d:
                    arriving[subshard_of(r["source"], n, r["acl"])].append(r)
            for sub in sorted(set(old) | set(leaving) | set(arriving)):
                if sub not in leaving and sub not in arriving:
                    out.append(old[sub])
                elif sub in old:
                    info = update_shard(t.config.index, old[sub], leaving.get(sub, []), arriving.get(sub, []))
                    if info is not None:
                        out.append(info)
                elif arriving.get(sub):
                    out.append(build_shard(t.config.index, d, arriving[sub], sub))
        return out

    def _stored_domain_rows(self, domain: str, fields: list[str]) -> list[dict]:
        t = self._t
        rows = t.stored.where_in(T.CONTENTS, "domain", [domain], fields).to_pylist()
        return [r for r in rows if r["source"] not in t.change.leaving] + [
            r for r in t.arriving_rows if r["domain"] == domain]


def _layouts(t: _Touched, changes: dict[str, _RowChange]) -> dict:
    """The query layouts: each changed domain's rows with this update's rows removed and added,
    taken from its previous layout (or, for a domain without one or whose layout is of an older
    format, from the tables the previous manifest names); the others kept."""
    m = t.reader.manifest
    # a layout missing or of an older format (without vectors, say) is read from the tables
    stale = set(stale_layouts(t.reader))
    redo = set(t.change.domains) | {d.name for d in m.domains if d.name not in m.layouts} | stale
    out = {d: ref for d, ref in m.layouts.items() if d not in redo}
    pinned = {name: t.reader.table(name) for name in (T.CONTENTS, T.DIRECTORIES, T.ENTITIES, T.EDGES)}
    previous = _OpenedOnUse({d: t.reader.layout_folder(d) for d in redo if d in m.layouts and d not in stale},
                            t.reader.block_file)
    deltas = {d: _domain_delta(changes, d) for d in redo}
    out.update(write_layouts(pinned, t.config.index, sorted(redo), layout_options(t.config.store),
                             previous=previous, deltas=deltas))
    return out


def _domain_infos(t: _Touched, changes: dict[str, _RowChange]) -> list[DomainInfo]:
    """What the manifest says of each domain: the unchanged ones kept, the changed ones from
    their document rows after the change."""
    m = t.reader.manifest
    changed = sorted(t.change.domains)
    keep = [d for d in m.domains if d.name not in changed]
    stored = t.stored.where_in(T.DOCUMENTS, "domain", changed, ["path", "domain", "version", "collection", "status"])
    stored = stored.filter(pc.invert(pc.is_in(stored.column("path"), value_set=pa.array(
        sorted(t.change.leaving), pa.string()))))
    arriving = changes[T.DOCUMENTS].added.select(stored.column_names)
    facts = DomainFacts.of_documents(pa.concat_tables([stored, arriving.cast(stored.schema)]))
    facts.n_chunks.update({d: t.n_chunks_after.get(d, 0) for d in changed})
    present = ({task.domain for task in t.scan.tasks} | {d for d, n in facts.n_docs.items() if n}) & set(changed)
    return keep + facts.infos(sorted(present), descriptions(t.scan.tasks))


class _RowUpdate:
    """The driver's half of an update: one delta step per table family, then their commit.

    ``table_changes`` runs the steps in the order their inputs need: directories (nodes merged
    and summarized again), one embedding batch (arriving chunks and those directories),
    contents, the path-keyed tables, entities (from the arriving chunks' vectors), edges (with
    the directories' containment edges). ``commit`` applies each change to its table, patches
    the BM25 shards and the layouts, and writes the manifest last.
    """

    def __init__(self, config: BuildConfig, reader: IndexReader, change: _Change, scan: CorpusScan,
                 arriving: ArrivingRows, model_id: str, dim: int):
        self._t = _Touched(config, reader, change, scan, arriving, model_id, dim)
        self._directories = _DirectoryDelta(self._t)
        self.embeddings_computed = self.embeddings_from_cache = 0
        self.new_vectors = T.embedding_cache_schema(dim).empty_table()

    @property
    def llm_calls(self) -> int:
        return self._directories.llm_calls

    @property
    def llm_fallbacks(self) -> int:
        return self._directories.llm_fallbacks

    def table_changes(self) -> dict[str, _RowChange]:
        t = self._t
        directories = self._directories.run()
        embedded = _embed(t, directories.redo_nodes)     # arriving chunks and directory summaries: one batch
        self.embeddings_computed, self.embeddings_from_cache = embedded.computed, embedded.from_cache
        self.new_vectors = embedded.new_vectors
        directories.table.added = embedded.directories
        contents = _content_change(t, embedded.contents)
        out = {
            T.CONTENTS: contents,
            T.DOCUMENTS: _document_rows(t, T.DOCUMENTS, t.arriving.documents),
            T.DEAD_LETTERS: _document_rows(t, T.DEAD_LETTERS, t.arriving.dead_letters),
            T.SECRET_FINDINGS: _document_rows(t, T.SECRET_FINDINGS, t.arriving.secret_findings),
            T.DIRECTORIES: directories.table,
        }
        out[T.ENTITIES], out[T.ENTITY_STATS] = _EntityDelta(t).run(contents.added)
        out[T.EDGES] = _edge_change(t, directories.edges_gone, directories.edges_new)
        return out

    def commit(self, changes: dict[str, _RowChange], guard: Optional[CommitGuard],
               build_segments: SegmentBuilder) -> tuple[Manifest, UpdateWrites]:
        """Write the added rows as fragments, patch the BM25 shards and the layouts, and commit
        it all through the one commit path (vdgr_core/store/writer.py), the manifest last."""
        t = self._t
        m = t.reader.manifest
        tables, digests = {}, {}
        for name in T.TABLES:
            c = changes[name]
            fragments = write_fragments(t.config.index, name, c.added)
            tables[name] = TableChange(tuple(fragments), c.added.num_rows, c.key, tuple(c.keys))
            old = {d: dg.from_hex(tab[name]) for d, tab in m.domain_digests.items() if name in tab}
            digests[name] = dg.add(dg.add(old, dg.domain_digests(c.deleted), -1), dg.domain_digests(c.added))
        subshards = subshards_per_domain(t.scan, t.config)
        shards = _ShardDelta(t).shards(subshards)
        failpoint("commit.shards_published")
        layouts = _layouts(t, changes)
        cache = pa.concat_tables([t.arriving.new_vectors, self.new_vectors])
        plan = CommitPlan(tables=tables, digests=digests, shards=shards, subshards=subshards, layouts=layouts,
                          domains=_domain_infos(t, changes), embedding_model=t.model_id, dim=t.dim,
                          settings=t.config.settings(), base=m, parent_build_id=m.build_id,
                          cache_fragments=tuple(write_fragments(t.config.index, T.EMBEDDING_CACHE,
                                                                new_cache_rows(t.config.index, cache, t.dim))))
        return commit(t.config.index, plan, t.config.store, guard=guard, build_segments=build_segments)


def stale_shards(reader: IndexReader) -> list[str]:
    """Domains whose BM25 shards are of an older schema (vdgr_core/store/tantivy_shard.py
    ``SCHEMA_VERSION``) or carry no digest: an update rebuilds them from the tables, even when
    no document changed, so an updated index equals a rebuild."""
    return sorted(d for d, shards in reader.manifest.tantivy_shards.items()
                  if any(not s.current for s in shards))


def stale_layouts(reader: IndexReader) -> list[str]:
    """Domains whose query layout is missing or of an older format (an index written by an
    older version): an update writes them from the tables, even when no document changed."""
    m = reader.manifest
    missing = {d.name for d in m.domains if d.name not in m.layouts and d.n_chunks}
    return sorted(missing | {d for d in m.layouts if layout_format(reader.layout_folder(d)) != LAYOUT_FORMAT})


class _OpenedOnUse(Mapping):
    """Previous layouts by domain, each opened when asked for and not kept: the patch reads one
    domain's memory maps, and they are unmapped once that domain is written, so the pages it
    touched leave the process (at 1M chunks, keeping all 33 domains' maps open added ~1.2 GB of
    file-backed RSS to the update's peak)."""

    def __init__(self, folders: dict[str, str], block_file):
        self._folders, self._block_file = folders, block_file

    def __getitem__(self, domain: str) -> DomainLayout:
        return DomainLayout(self._folders[domain], self._block_file)

    def __contains__(self, domain) -> bool:       # Mapping's default would open the layout
        return domain in self._folders

    def __iter__(self):
        return iter(self._folders)

    def __len__(self) -> int:
        return len(self._folders)


def _of_domain(table: Optional[pa.Table], domain: str) -> pa.Table:
    if table is None or table.num_rows == 0:
        return table if table is not None else pa.table({"domain": pa.array([], pa.string())})
    return table.filter(pc.equal(table.column("domain"), domain))


def _domain_delta(changes: dict[str, _RowChange], domain: str) -> DomainDelta:
    """One domain's part of the table changes, as the layout patch takes it."""
    def gone(name: str, key: str) -> frozenset:
        rows = _of_domain(changes[name].deleted, domain)
        return frozenset(rows.column(key).to_pylist()) if key in rows.column_names else frozenset()

    return DomainDelta(
        contents_gone=gone(T.CONTENTS, "chunk_id"), directories_gone=gone(T.DIRECTORIES, "node_id"),
        entities_gone=gone(T.ENTITIES, "entity_id"), edges_gone=_of_domain(changes[T.EDGES].deleted, domain),
        contents=_of_domain(changes[T.CONTENTS].added, domain),
        directories=_of_domain(changes[T.DIRECTORIES].added, domain),
        entities=_of_domain(changes[T.ENTITIES].added, domain), edges=_of_domain(changes[T.EDGES].added, domain))


__all__ = ["apply_document_delta", "stale_layouts", "stale_shards", "UpdateWrites"]
