"""Whole in-memory tables committed as an index through the one commit path, for query tests.

What a build's workers do, done here in one process: each table's rows written as Lance
fragments, each domain's layout built from its rows, then one ``CommitPlan`` committed
(vdgr_core/store/writer.py), the manifest last.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from schemas import tables as T
from schemas.config import StoreConfig
from vdgr_core.store import digest as dg
from vdgr_core.store.fragments import write_fragments
from vdgr_core.store.layout_build import layout_columns, layout_of_rows, layout_options
from vdgr_core.store.manifest import DomainInfo, Manifest
from vdgr_core.store.tantivy_shard import ShardInfo
from vdgr_core.store.writer import CommitPlan, TableChange, commit


def commit_tables(index_dir: str, tables: Mapping[str, pa.Table], shards: Sequence[ShardInfo], *,
                  embedding_model: str, dim: int, domains: Sequence[DomainInfo],
                  store: Optional[StoreConfig] = None) -> Manifest:
    """Commit ``tables`` (one per name in ``schemas.tables.TABLES``; missing ones empty) and the
    published ``shards`` as the index at ``index_dir``; the manifest written."""
    store = store or StoreConfig()
    changes, digests, whole = {}, {}, {}
    for name in T.TABLES:
        schema = T.schema_for(name, dim)
        table = tables.get(name)
        table = schema.empty_table() if table is None else table.select(schema.names).cast(schema)
        whole[name] = table
        changes[name] = TableChange(tuple(write_fragments(index_dir, name, table, replace=True)), table.num_rows)
        digests[name] = dg.domain_digests(table) if table.num_rows else {}
    options = layout_options(store)
    layouts = {}
    for domain in sorted({d for name in (T.CONTENTS, T.DIRECTORIES) for d in digests[name]}):
        raw = {name: _of(whole[name], domain).select(layout_columns(name, whole[name].schema, options).names)
               for name in (T.CONTENTS, T.DIRECTORIES, T.ENTITIES, T.EDGES)}
        ref = layout_of_rows(index_dir, domain, raw, options)
        if ref is not None:
            layouts[domain] = ref
    plan = CommitPlan(tables=changes, digests=digests, shards=list(shards), subshards={}, layouts=layouts,
                      domains=list(domains), embedding_model=embedding_model, dim=dim)
    return commit(index_dir, plan, store, guard=None)[0]


def _of(table: pa.Table, domain: str) -> pa.Table:
    return table.filter(pc.equal(table.column("domain"), domain))
