"""Driver-side commit of a build: staged tables -> LanceDB, manifest last."""
from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.build import staged_schema
from pipelines.staging import Staging
from schemas import tables as T
from vdgr_core.corpus import CorpusScan
from vdgr_core.indexing.embed_cache import append_to_cache
from vdgr_core.indexing.entity_vectors import with_entity_vectors
from vdgr_core.safety.secrets import mask_short
from vdgr_core.store.manifest import DomainInfo, Manifest
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.tantivy_shard import ShardInfo
from vdgr_core.store.writer import commit_index


def domain_infos(scan: CorpusScan, documents: pa.Table, contents: pa.Table) -> list[DomainInfo]:
    """What the router needs per domain: description, versions, collections, sizes."""
    desc: dict[str, str] = {}
    for t in scan.tasks:
        if t.folder_metas and t.domain not in desc:
            labels = dict(t.folder_metas[0].labels)
            # credentials masked like document text (the manifest and router prompts carry it)
            desc[t.domain] = mask_short(labels.get("description", "") or (t.folder_metas[0].title or ""))
    versions, collections, n_docs = defaultdict(set), defaultdict(set), defaultdict(int)
    for row in documents.select(["domain", "version", "collection", "status"]).to_pylist():
        if row["status"] != "indexed":
            continue
        n_docs[row["domain"]] += 1
        if row["version"]:
            versions[row["domain"]].add(row["version"])
        if row["collection"]:
            collections[row["domain"]].add(row["collection"])
    n_chunks = defaultdict(int)
    for d in contents.column("domain").to_pylist():
        n_chunks[d] += 1
    domains = sorted({t.domain for t in scan.tasks} | set(n_docs))
    return [DomainInfo(d, desc.get(d, ""), tuple(sorted(versions[d])), tuple(sorted(collections[d])),
                       n_docs[d], n_chunks[d]) for d in domains]


@dataclass(frozen=True)
class KeepFromIndex:
    """For an update: the committed index and the domains being recomputed.

    Rows and shards of every other domain are carried over unchanged.
    """

    reader: IndexReader
    recomputed: tuple[str, ...]

    def kept_rows(self, name: str) -> pa.Table:
        if name not in self.reader.manifest.table_versions:     # a table added since that build
            return pa.Table.from_pylist([], schema=T.schema_for(name, self.reader.dim))
        old = self.reader.arrow(name)
        if old.num_rows == 0:
            return old
        mask = pc.invert(pc.is_in(old.column("domain"), value_set=pa.array(list(self.recomputed), pa.string())))
        return old.filter(mask)

    def kept_shards(self) -> list[ShardInfo]:
        m = self.reader.manifest
        counts = {d.name: d.n_chunks for d in m.domains}
        return [ShardInfo(d, folder, counts.get(d, 0), os.path.basename(folder))
                for d, folder in sorted(m.tantivy_shards.items()) if d not in self.recomputed]


def commit_build(index_dir: str, staging: Staging, scan: CorpusScan, *, model_id: str, dim: int,
                 config: dict, keep: Optional[KeepFromIndex] = None) -> tuple[Manifest, dict]:
    """Commit staged tables (plus, for an update, the rows kept from the committed index)."""
    tables = {name: staging.read_table(name, staged_schema(name, dim)) for name in T.TABLES}
    tables[T.ENTITIES] = with_entity_vectors(tables[T.ENTITIES], tables[T.EDGES], tables[T.CONTENTS], dim)
    shards = staging.read_shards()
    parent_build_id = None
    if keep is not None:
        tables = {name: pa.concat_tables([T.conform(keep.kept_rows(name), t.schema), t])
                  for name, t in tables.items()}
        shards = sorted(keep.kept_shards() + shards, key=lambda s: s.domain)
        parent_build_id = keep.reader.manifest.build_id
    new_vectors = staging.read_table(T.EMBEDDING_CACHE, T.embedding_cache_schema(dim))
    append_to_cache(index_dir, new_vectors, dim)
    manifest, writes = commit_index(
        index_dir, tables, shards, embedding_model=model_id, dim=dim,
        domains=domain_infos(scan, tables[T.DOCUMENTS], tables[T.CONTENTS]),
        config=config, parent_build_id=parent_build_id)
    return manifest, writes
