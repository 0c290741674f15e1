"""Row-level incremental update: only the rows a change touches are read and rewritten.

1. The arriving documents (added, changed, moved in) are parsed, chunked and annotated by the
   build's functions: in this process for a small change (``process_in_driver``), by the Beam
   pipeline (``changed_documents_pipeline``) for a large one (pipelines/delta_build.py).
2. The rows of the leaving documents (changed, deleted, moved away) are read by a filter on their
   paths; from them and the arriving rows, one delta step per table family derives what each
   table loses and gains (pipelines/delta_rows.py).
3. The added rows are written as fragments, the BM25 sub-shards holding leaving or arriving
   documents are copied with those chunks deleted and added, and the query layouts of the
   changed domains (vdgr_core/store/domain_layout.py) are patched: their previous rows with the
   delta applied. The per-domain digests move by the hashes of the rows deleted and written.
4. All of it is committed by the build's commit (vdgr_core/store/writer.py): one Lance
   ``Update`` per table (deletions and appended fragments on the manifest's version), the
   manifest last. Readers pinned to the previous manifest keep their versions.

The result equals a full rebuild of the new corpus (tests/pipelines/test_update_property.py).
"""
from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Mapping
from typing import Callable, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.build import subshards_per_domain
from pipelines.delta_build import ArrivingRows, process_in_driver
from pipelines.delta_rows import (Change, DirectoryDelta, EntityDelta, RowChange, Touched, content_change,
                                  document_rows, edge_change, embed_delta)
from pipelines.metrics import beam_counter
from pipelines.run_build import BuildReport, staged_pipeline_run
from pipelines.update_plan import UpdatePlan
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig
from vdgr_core.corpus import CorpusScan
from vdgr_core.embedding import embedder_identity
from vdgr_core.indexing.domain_facts import DomainFacts, descriptions
from vdgr_core.indexing.embed_cache import new_cache_rows
from vdgr_core.memory import release_unused_memory
from vdgr_core.progress import plural, reporting
from vdgr_core.safety import content_rules
from vdgr_core.store import digest as dg
from vdgr_core.store.domain_layout import FORMAT as LAYOUT_FORMAT
from vdgr_core.store.domain_layout import DomainLayout, layout_format
from vdgr_core.store.failpoints import failpoint
from vdgr_core.store.fragments import write_fragments
from vdgr_core.store.layout_build import layout_options, write_layouts
from vdgr_core.store.layout_rows import DomainDelta
from vdgr_core.store.manifest import CommitGuard, DomainInfo, Manifest
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.table_indexes import build_segments_here
from vdgr_core.store.tantivy_shard import SHARD_COLUMNS, ShardInfo, build_shard, subshard_of, update_shard
from vdgr_core.store.writer import CommitPlan, SegmentBuilder, TableChange, UpdateWrites, commit

_log = logging.getLogger("vdgr.update")


def apply_document_delta(config: BuildConfig, reader: IndexReader, plan: UpdatePlan, scan: CorpusScan,
                         beam_args: Sequence[str], say: Callable[[str], None], t0: float, *,
                         guard: Optional[CommitGuard]) -> BuildReport:
    """Apply ``plan`` to the committed index row by row and commit a new manifest, checked by
    ``guard`` (the held index lock, see ``write_manifest``)."""
    model_id, dim = embedder_identity(config.embedding)
    change = Change.of(plan)
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
            arriving = process_in_driver(config.slices, sub, dead_from_scan, dim)
        else:
            say(f"processing {plural(n_arriving, 'arriving document')} with the pipeline"
                " (parse, chunk, annotate, embed)")
            from pipelines.delta_build import changed_documents_pipeline

            def add_steps(p, staging):
                changed_documents_pipeline(p, config, sub, model_id=model_id, dim=dim, staging=staging,
                                           dead_from_scan=dead_from_scan)

            arriving = _run_pipeline(config.index, config.embedding if sub.tasks else None, beam_args, add_steps, dim)
        stage["documents_s"] = time.perf_counter() - t1
        failpoint("commit.staged")
        say(f"reading the rows the change touches in {plural(len(change.domains), 'domain')}")
        t2 = time.perf_counter()
        update = _RowUpdate(Touched(config.slices, config.index, reader, change, scan, arriving, model_id, dim))
        changes = update.table_changes()
    release_unused_memory()          # what reading the touched rows freed, before the writes
    stage["merge_s"] = time.perf_counter() - t2
    say("writing changed rows, shards, layouts and manifest")
    t3 = time.perf_counter()
    manifest, writes = update.commit(changes, config.settings(content_rules()), guard, build_segments_here)
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


def _run_pipeline(index: str, warm: Optional[EmbeddingConfig], beam_args: Sequence[str], add_steps, dim: int
                  ) -> ArrivingRows:
    """The arriving documents through the pipeline ``add_steps`` adds (staged, read back)."""
    from pipelines.delta_build import read_staged

    with staged_pipeline_run(index, beam_args, add_steps, warm_embedder=warm) as (staging, result):
        return read_staged(staging, dim, lambda name: beam_counter(result, name))


class _RowUpdate:
    """The driver's half of an update: one delta step per table family, then their commit.

    ``table_changes`` runs the steps in the order their inputs need: directories (nodes merged
    and summarized again), one embedding batch (arriving chunks and those directories),
    contents, the path-keyed tables, entities (from the arriving chunks' vectors), edges (with
    the directories' containment edges). ``commit`` applies each change to its table, patches
    the BM25 shards and the layouts, and writes the manifest last.
    """

    def __init__(self, touched: Touched):
        self._t = touched
        self._directories = DirectoryDelta(touched)
        self.embeddings_computed = self.embeddings_from_cache = 0
        self.new_vectors = T.embedding_cache_schema(touched.dim).empty_table()

    @property
    def llm_calls(self) -> int:
        return self._directories.llm_calls

    @property
    def llm_fallbacks(self) -> int:
        return self._directories.llm_fallbacks

    def table_changes(self) -> dict[str, RowChange]:
        t = self._t
        directories = self._directories.run()
        embedded = embed_delta(t, directories.redo_nodes)     # arriving chunks and directory summaries: one batch
        self.embeddings_computed, self.embeddings_from_cache = embedded.computed, embedded.from_cache
        self.new_vectors = embedded.new_vectors
        directories.table.added = embedded.directories
        contents = content_change(t, embedded.contents)
        out = {
            T.CONTENTS: contents,
            T.DOCUMENTS: document_rows(t, T.DOCUMENTS, t.arriving.documents),
            T.DEAD_LETTERS: document_rows(t, T.DEAD_LETTERS, t.arriving.dead_letters),
            T.SECRET_FINDINGS: document_rows(t, T.SECRET_FINDINGS, t.arriving.secret_findings),
            T.DIRECTORIES: directories.table,
        }
        out[T.ENTITIES], out[T.ENTITY_STATS] = EntityDelta(t).run(contents.added)
        out[T.EDGES] = edge_change(t, directories.edges_gone, directories.edges_new)
        return out

    def commit(self, changes: dict[str, RowChange], settings: dict, guard: Optional[CommitGuard],
               build_segments: SegmentBuilder) -> tuple[Manifest, UpdateWrites]:
        """Write the added rows as fragments, patch the BM25 shards and the layouts, and commit
        it all through the one commit path (vdgr_core/store/writer.py), the manifest last."""
        t = self._t
        m = t.reader.manifest
        tables, digests = {}, {}
        for name in T.TABLES:
            c = changes[name]
            fragments = write_fragments(t.index, name, c.added)
            tables[name] = TableChange(tuple(fragments), c.added.num_rows, c.key, tuple(c.keys))
            old = {d: dg.from_hex(tab[name]) for d, tab in m.domain_digests.items() if name in tab}
            digests[name] = dg.add(dg.add(old, dg.domain_digests(c.deleted), -1), dg.domain_digests(c.added))
        subshards = subshards_per_domain(t.scan, t.slices.store)
        shards = _ShardDelta(t).shards(subshards)
        failpoint("commit.shards_published")
        layouts = _layouts(t, changes)
        cache = pa.concat_tables([t.arriving.new_vectors, self.new_vectors])
        plan = CommitPlan(tables=tables, digests=digests, shards=shards, subshards=subshards, layouts=layouts,
                          domains=_domain_infos(t, changes), embedding_model=t.model_id, dim=t.dim,
                          settings=settings, base=m, parent_build_id=m.build_id,
                          cache_fragments=tuple(write_fragments(t.index, T.EMBEDDING_CACHE,
                                                                new_cache_rows(t.index, cache, t.dim))))
        return commit(t.index, plan, t.slices.store, guard=guard, build_segments=build_segments)


class _ShardDelta:
    """BM25 sub-shards: each changed domain's sub-shards patched (or rebuilt), and the shards
    of every domain of an older shard schema rebuilt in the current one; the others kept."""

    def __init__(self, t: Touched):
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
                out += [build_shard(t.index, d, rs, sub) for sub, rs in sorted(by_sub.items())]
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
                    info = update_shard(t.index, old[sub], leaving.get(sub, []), arriving.get(sub, []))
                    if info is not None:
                        out.append(info)
                elif arriving.get(sub):
                    out.append(build_shard(t.index, d, arriving[sub], sub))
        return out

    def _stored_domain_rows(self, domain: str, fields: list[str]) -> list[dict]:
        t = self._t
        rows = t.stored.where_in(T.CONTENTS, "domain", [domain], fields).to_pylist()
        return [r for r in rows if r["source"] not in t.change.leaving] + [
            r for r in t.arriving_rows if r["domain"] == domain]


def _layouts(t: Touched, changes: dict[str, RowChange]) -> dict:
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
    out.update(write_layouts(pinned, t.index, sorted(redo), layout_options(t.slices.store),
                             previous=previous, deltas=deltas))
    return out


def _domain_infos(t: Touched, changes: dict[str, RowChange]) -> list[DomainInfo]:
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


def _domain_delta(changes: dict[str, RowChange], domain: str) -> DomainDelta:
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
