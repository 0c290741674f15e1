"""The build's commit plan: what the workers staged, named in one commit (vdgr_core/store/writer.py).

The pipeline's workers wrote every table's rows as Lance fragments, the BM25 sub-shards and the
domains' query layouts where the index lives, and ``staged.json`` lists them with the row
counts, digests and domain facts (transforms/write.py). The driver turns that list into a
:class:`~vdgr_core.store.writer.CommitPlan` and commits it: metadata only, whatever the
corpus's size. Where the indexes due on the new table versions are built is the caller's
``build_segments`` (workers for a runner of worker processes: pipelines/index_segments.py).
"""
from __future__ import annotations

from typing import Optional

from pipelines.build import subshards_per_domain
from pipelines.staging import Staging, StagedList
from schemas import tables as T
from schemas.config import StoreConfig
from vdgr_core.corpus import CorpusScan
from vdgr_core.indexing.domain_facts import DomainFacts, descriptions
from vdgr_core.store.domain_layout import LayoutRef
from vdgr_core.store.file_stats import stat_rows, write_file_stats
from vdgr_core.store.fragments import read_table
from vdgr_core.store.manifest import CommitGuard, Manifest
from vdgr_core.store.tantivy_shard import ShardInfo
from vdgr_core.store.table_indexes import build_segments_here
from vdgr_core.store.writer import CommitPlan, SegmentBuilder, TableChange, commit


def shard_infos(staged: StagedList) -> list[ShardInfo]:
    # a staged record without "schema" (staged by an older version) reads as stale: the next
    # update rebuilds that shard
    return sorted((ShardInfo(r["domain"], r["folder"], r["n_docs"], r["digest"], r["sub"], r.get("schema", ""),
                             tuple(r.get("acl", ())))
                   for r in staged.of_kind("shard")), key=lambda s: (s.domain, s.sub))


def build_plan(staged: StagedList, scan: CorpusScan, store: StoreConfig, settings: dict, *, model_id: str,
               dim: int, parent_build_id: Optional[str]) -> CommitPlan:
    """The commit of a build whose workers staged ``staged``: every table's rows are its
    fragments (an overwrite)."""
    tables = {name: TableChange(tuple(staged.fragments.get(name, ())), staged.rows.get(name, 0)) for name in T.TABLES}
    facts = DomainFacts.from_json(staged.facts)
    return CommitPlan(
        tables=tables, digests={n: staged.digests.get(n, {}) for n in T.TABLES}, shards=shard_infos(staged),
        subshards=subshards_per_domain(scan, store),
        layouts={r["domain"]: LayoutRef.from_json(r["ref"]) for r in staged.of_kind("layout")},
        domains=facts.infos({t.domain for t in scan.tasks}, descriptions(scan.tasks)),
        embedding_model=model_id, dim=dim, settings=settings, parent_build_id=parent_build_id,
        cache_fragments=tuple(staged.fragments.get(T.EMBEDDING_CACHE, ())))


def commit_build(index: str, staging: Staging, scan: CorpusScan, store: StoreConfig, settings: dict, *,
                 model_id: str, dim: int, guard: Optional[CommitGuard], parent_build_id: Optional[str] = None,
                 build_segments: SegmentBuilder = build_segments_here) -> Manifest:
    """Commit the staged build, the manifest last, checked by ``guard`` (the held index lock:
    :class:`ConcurrentCommitError` when the manifest moved since); then remember the corpus
    files' sizes, times and hashes for the next update (a cache, not part of the index)."""
    staged = staging.staged()
    plan = build_plan(staged, scan, store, settings, model_id=model_id, dim=dim, parent_build_id=parent_build_id)
    manifest, _ = commit(index, plan, store, guard=guard, build_segments=build_segments)
    documents = read_table(index, T.DOCUMENTS, ["path", "content_hash"], manifest.table_versions[T.DOCUMENTS])
    hashes = dict(zip(documents.column("path").to_pylist(), documents.column("content_hash").to_pylist()))
    write_file_stats(index, stat_rows(hashes, scan.file_stats, scan.listed_ns), replace_all=True)
    return manifest


__all__ = ["build_plan", "commit_build", "shard_infos"]
