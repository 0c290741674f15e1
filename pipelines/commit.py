"""Driver-side commit of a build: staged files -> LanceDB (streamed), indexes, layouts, manifest.

The driver reads ``staged.json`` (the files, row counts and per-domain digests the workers
staged) and streams each table's files into one LanceDB write, a few thousand rows at a time;
while they pass it collects what is small (per-domain document facts for the router). Then it
builds the vector and scalar indexes and writes each domain's query layout from that domain's
rows (vdgr_core/store/layout_build.py). It never holds a whole table.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterator, Optional

import pyarrow as pa

from pipelines.build import subshards_per_domain
from pipelines.staging import Staging, StagedList
from schemas import tables as T
from schemas.config import BuildConfig
from vdgr_core.corpus import CorpusScan
from vdgr_core.indexing.embed_cache import append_batches_to_cache
from vdgr_core.safety.secrets import mask_short
from vdgr_core.store.file_stats import stat_rows, write_file_stats
from vdgr_core.store.index_beside import vector_indexes_beside
from vdgr_core.store.lance_store import connect
from vdgr_core.store.layout_build import layout_options, write_layouts
from vdgr_core.store.manifest import CommitGuard, DomainInfo, Manifest
from vdgr_core.store.tantivy_shard import ShardInfo
from vdgr_core.store.writer import (CommitPlan, adopt_vector_indexes, build_indexes, write_plan_manifest,
                                    write_table_stream)


class DomainFacts:
    """What the router needs per domain (versions, collections, documents, chunks), gathered
    from document and content batches as they stream past."""

    def __init__(self):
        self.versions, self.collections = defaultdict(set), defaultdict(set)
        self.n_docs, self.n_chunks = defaultdict(int), defaultdict(int)

    def add_documents(self, batch) -> None:
        for row in batch.select(["domain", "version", "collection", "status"]).to_pylist():
            if row["status"] != "indexed":
                continue
            self.n_docs[row["domain"]] += 1
            if row["version"]:
                self.versions[row["domain"]].add(row["version"])
            if row["collection"]:
                self.collections[row["domain"]].add(row["collection"])

    def add_contents(self, batch) -> None:
        for d in batch.column("domain").to_pylist():
            self.n_chunks[d] += 1

    def infos(self, scan: CorpusScan) -> list[DomainInfo]:
        return domain_infos(scan, self)


def descriptions(scan: CorpusScan) -> dict[str, str]:
    desc: dict[str, str] = {}
    for t in scan.tasks:
        if t.folder_metas and t.domain not in desc:
            labels = dict(t.folder_metas[0].labels)
            # credentials masked like document text (the manifest and router prompts carry it)
            desc[t.domain] = mask_short(labels.get("description", "") or (t.folder_metas[0].title or ""))
    return desc


def domain_infos(scan: CorpusScan, facts: DomainFacts) -> list[DomainInfo]:
    desc = descriptions(scan)
    domains = sorted({t.domain for t in scan.tasks} | set(facts.n_docs))
    return [DomainInfo(d, desc.get(d, ""), tuple(sorted(facts.versions[d])), tuple(sorted(facts.collections[d])),
                       facts.n_docs[d], facts.n_chunks[d]) for d in domains]


def _tap(batches, *consumers) -> Iterator[pa.RecordBatch]:
    for b in batches:
        for consume in consumers:
            consume(b)
        yield b


def shard_infos(staged: StagedList) -> list[ShardInfo]:
    # a staged record without "schema" (staged by an older version) reads as stale: the next
    # update rebuilds that shard
    return sorted((ShardInfo(r["domain"], r["folder"], r["n_docs"], r["digest"], r["sub"], r.get("schema", ""),
                             tuple(r.get("acl", ())))
                   for r in staged.of_kind("shard")), key=lambda s: (s.domain, s.sub))


def commit_build(index_dir: str, staging: Staging, scan: CorpusScan, *, model_id: str, dim: int,
                 config: BuildConfig, guard: Optional[CommitGuard],
                 parent_build_id: Optional[str] = None) -> Manifest:
    """Commit the staged build: every table written as one new version, then indexes, the
    domains' query layouts, the embedding cache, and the manifest last, checked by ``guard``
    (the held index lock: :class:`ConcurrentCommitError` when the manifest moved since)."""
    staged = staging.staged()
    db = connect(index_dir)
    plan = CommitPlan()
    facts = DomainFacts()
    domains = sorted({t.domain for t in scan.tasks})
    hashes: dict[str, str] = {}
    taps = {
        T.DOCUMENTS: [facts.add_documents,
                      lambda b: hashes.update(zip(b.column("path").to_pylist(), b.column("content_hash").to_pylist()))],
        T.CONTENTS: [facts.add_contents],
    }
    for name in T.TABLES:
        schema = T.schema_for(name, dim)
        batches = _tap(staging.batches(name, schema, staged=staged), *taps.get(name, []))
        plan.writes[name] = write_table_stream(db, name, schema, batches)
        plan.digests[name] = staged.digests.get(name, {})
    plan.shards = shard_infos(staged)
    plan.subshards = subshards_per_domain(scan, config)
    build_indexes(db, plan, config.store, dim, vectors=False)
    # a large build trains its vector indexes in a child process while the layouts are written
    with vector_indexes_beside(index_dir, plan.writes, config.store, dim) as beside:
        plan.layouts = write_layouts({n: db.open_table(n) for n in (T.CONTENTS, T.DIRECTORIES, T.ENTITIES, T.EDGES)},
                                     index_dir, domains, layout_options(config.store))
    adopt_vector_indexes(db, plan, beside.described)
    write_file_stats(index_dir, stat_rows(hashes, scan.file_stats, scan.listed_ns), replace_all=True)
    append_batches_to_cache(index_dir, staging.batches(T.EMBEDDING_CACHE, T.embedding_cache_schema(dim),
                                                       staged=staged), dim)
    return write_plan_manifest(index_dir, plan, embedding_model=model_id, dim=dim,
                               domains=facts.infos(scan), config=config.settings(),
                               parent_build_id=parent_build_id, guard=guard)
