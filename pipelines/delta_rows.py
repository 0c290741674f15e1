"""An update's rows: what each table loses and gains, from the stored rows and the arriving ones.

The arriving documents' rows come from the build's per-document functions
(pipelines/delta_build.py). From them and the rows of the leaving documents (read by key
filters, vdgr_core/store/filtered_reads.py), one delta step per table family derives what
changes (vdgr_core/indexing/row_delta.py, domain_delta.py): directories (nodes merged and
summarized again, with their ancestors), one embedding batch (arriving chunks and those
directories), contents, the path-keyed tables, entities and their statistics, edges. Each step
returns a :class:`RowChange`: the rows deleted by key and the rows added.
"""
from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems
from lancedb.expr import col

from pipelines.delta_build import ArrivingRows
from pipelines.update_plan import UpdatePlan
from schemas import tables as T
from schemas.config import BuildSlices
from schemas.errors import IndexError_
from transforms.read import open_read
from vdgr_core.chunking import folder_nodes
from vdgr_core.corpus import CorpusScan
from vdgr_core.embedding import embedding_key
from vdgr_core.entities import entity_importance
from vdgr_core.ids import edge_id, entity_id
from vdgr_core.indexing import domain_delta as delta
from vdgr_core.indexing import row_delta
from vdgr_core.indexing.document import process_document, read_bytes_limited
from vdgr_core.indexing.embed_cache import EmbeddingCache, embed_with_cache
from vdgr_core.indexing.entity_merge import EntityStats, entity_row, stats_from_row, stats_row
from vdgr_core.indexing.model_home import process_embedder
from vdgr_core.indexing.rows import content_embedding_text, directory_embedding_text, directory_row, edge_row
from vdgr_core.indexing.tree_summary import llm_directory_summarizer
from vdgr_core.store.filtered_reads import FilteredReads
from vdgr_core.store.reader import IndexReader

_log = logging.getLogger("vdgr.update")
_NO_VECTOR = ["chunk_id", "doc_id", "text", "source", "title", "path", "parent_id", "domain", "collection",
              "version", "acl", "position", "page", "n_tokens", "summary", "entities", "terms"]


@dataclass(frozen=True)
class Change:
    """What leaves and what arrives, by corpus path."""

    leaving: frozenset[str]          # rows of these paths are dropped (changed, deleted, moved away)
    arriving: tuple[str, ...]        # these paths are processed again (added, changed, moved in)
    domains: tuple[str, ...]         # the domains the change touches

    @classmethod
    def of(cls, plan: UpdatePlan) -> "Change":
        arriving = tuple(sorted(set(plan.added) | set(plan.changed)))
        return cls(frozenset(set(plan.changed) | set(plan.deleted) | set(arriving)), arriving,
                   tuple(plan.affected_domains))


@dataclass
class RowChange:
    """One table's part of the update: rows deleted (by ``key`` in ``keys``) and rows added."""

    key: str
    keys: list[str]
    deleted: pa.Table
    added: pa.Table


def row_dicts(contents: pa.Table) -> list[dict]:
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


def table_rows(name: str, rows: list[dict], dim: int) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=T.schema_for(name, dim))


class Touched:
    """What every delta step reads: the change, the committed tables (by typed filters), the
    leaving and arriving content rows, and each domain's chunk count before and after."""

    def __init__(self, slices: BuildSlices, index: str, reader: IndexReader, change: Change, scan: CorpusScan,
                 arriving: ArrivingRows, model_id: str, dim: int):
        self.slices, self.index, self.reader, self.change, self.scan = slices, index, reader, change, scan
        self.arriving = arriving
        self.model_id, self.dim = model_id, dim
        self.stored = FilteredReads(reader)
        self.leaving = self.stored.where_in(T.CONTENTS, "source", change.leaving)
        self.leaving_rows = row_dicts(self.leaving)
        self.arriving_rows = arriving.contents.select(_NO_VECTOR).to_pylist()
        self.n_chunks = {d.name: d.n_chunks for d in reader.manifest.domains}
        delta_chunks = Counter(r["domain"] for r in self.arriving_rows)
        delta_chunks.subtract(Counter(r["domain"] for r in self.leaving_rows))
        self.n_chunks_after = {d: self.n_chunks.get(d, 0) + delta_chunks.get(d, 0)
                               for d in set(self.n_chunks) | set(delta_chunks)}


def document_rows(t: Touched, name: str, arriving: pa.Table) -> RowChange:
    """A table keyed by corpus path (documents, dead letters, secret findings): the leaving
    paths' rows go, the arriving documents' rows come."""
    schema = T.schema_for(name, t.dim)
    deleted = t.stored.where_in(name, "path", t.change.leaving)
    return RowChange("path", sorted(t.change.leaving), deleted, arriving.select(schema.names).cast(schema))


@dataclass
class DirectoryChange:
    """The directories step's result: the table change (rows added once embedded), the nodes
    summarized again, and the containment edges that go and come."""

    table: RowChange
    redo_nodes: list
    edges_gone: list[str]
    edges_new: list[dict]


class DirectoryDelta:
    """Directories: the nodes the leaving and arriving documents produce or share, merged
    again, and the summaries of those nodes, of the sections whose chunks changed and of their
    ancestors (nothing else); containment edges of every node merged again."""

    def __init__(self, t: Touched):
        self._t = t
        self.llm_calls = self.llm_fallbacks = 0

    def run(self) -> DirectoryChange:
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
                                     self._summarizer(), max_chars=t.slices.summaries.max_chars)
        rewritten = sorted(done.values(), key=lambda n: n.node_id)
        gone_keys = sorted(set(merge.touched) | set(only))
        deleted = t.stored.where_in(T.DIRECTORIES, "node_id", gone_keys)
        # containment edges of every node merged again: the old edge goes, the new one comes
        edges_gone = [edge_id(T.CONTAINS, old_nodes[i].parent_id, i) for i in merge.touched
                      if i in old_nodes and old_nodes[i].parent_id]
        edges_new = [edge_row(T.CONTAINS, n.parent_id, n.node_id, n.domain, 1.0) for n in merged.values()
                     if n.parent_id]
        return DirectoryChange(RowChange("node_id", gone_keys, deleted, None), rewritten, edges_gone, edges_new)

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
            data = read_bytes_limited(open_read, FileSystems.join(task.corpus_root, *rel.split("/")),
                                      t.slices.limits.max_file_bytes)
            out[rel] = process_document(task, data, t.slices.parse).directories
        return out

    def _summarizer(self):
        settings = self._t.slices.summaries
        if settings.llm is None:
            return None
        from vdgr_core.llm.client import LLMClient

        client = LLMClient(settings.llm)

        def on_fallback(title: str, reason: str) -> None:
            self.llm_fallbacks += 1
            _log.warning("LLM summary failed for directory %r; extractive summary used: %s", title, reason)

        summarize = llm_directory_summarizer(client, max_chars=settings.max_chars,
                                             on_fallback=on_fallback)

        def counted(*args):
            before = client.total_calls()
            try:
                return summarize(*args)
            finally:
                self.llm_calls += client.total_calls() - before

        return counted


@dataclass
class Embedded:
    """The embedding step's result: the arriving contents with vectors, the rewritten
    directory rows, the vectors computed (for the cache) and the counts."""

    contents: pa.Table
    directories: pa.Table
    new_vectors: pa.Table
    computed: int
    from_cache: int


def embed_delta(t: Touched, redo_nodes: list) -> Embedded:
    """Every new text in one batch through the cache: the arriving chunks (unless the pipeline
    embedded them) and the directory nodes summarized again."""
    items = []
    if "vector" not in t.arriving.contents.schema.names:
        items = [content_embedding_text(r["path"], r["text"]) for r in t.arriving_rows]
    n_contents = len(items)
    items += [directory_embedding_text(n) for n in redo_nodes]
    batch = embed_with_cache(lambda: process_embedder(t.slices.embed.embedding), t.dim,
                             EmbeddingCache(t.index),
                             [(embedding_key(t.model_id, text), text) for text in items])
    computed = sum(batch.computed)
    new_vectors = pa.Table.from_pylist(
        [{"key": k, "vector": v} for k, v, c in zip(batch.keys, batch.vectors, batch.computed) if c],
        schema=T.embedding_cache_schema(t.dim))
    contents = t.arriving.contents
    if n_contents or "vector" not in contents.schema.names:
        flat = pa.array(batch.vectors[:n_contents].reshape(-1), pa.float32())
        contents = contents.append_column("vector", pa.FixedSizeListArray.from_arrays(flat, t.dim))
    directories = table_rows(T.DIRECTORIES, [directory_row(n, v) for n, v in
                                        zip(redo_nodes, batch.vectors[n_contents:])], t.dim)
    return Embedded(contents, directories, new_vectors, computed, len(items) - computed)


def content_change(t: Touched, arriving_contents: pa.Table) -> RowChange:
    """Contents: the leaving documents' chunks go, the arriving ones (with vectors) come."""
    schema = T.schema_for(T.CONTENTS, t.dim)
    return RowChange("source", sorted(t.change.leaving), t.leaving,
                       arriving_contents.select(schema.names).cast(schema))


def edge_change(t: Touched, dir_gone: list[str], dir_new: list[dict]) -> RowChange:
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
    return RowChange("edge_id", sorted(gone_ids), deleted, table_rows(T.EDGES, added, t.dim))


class EntityDelta:
    """Entities and entity statistics: the mentions of the leaving chunks subtracted and the
    arriving ones' added (``entity_stats``); when a domain's chunk count changes, every entity
    row of that domain gets its new importance."""

    def __init__(self, t: Touched):
        self._t = t

    def run(self, arriving_contents: pa.Table) -> tuple[RowChange, RowChange]:
        t = self._t
        arriving_rows = row_dicts(arriving_contents)
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
        added = pa.concat_tables([table_rows(T.ENTITIES, new_entities, t.dim),
                                  self._recounted(old_entities.select(schema.names).cast(schema), affected)])
        return (RowChange("entity_id", ent_keys, old_entities, added),
                RowChange("entity_id", sorted(affected), old_stats, table_rows(T.ENTITY_STATS, new_stats, t.dim)))

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
