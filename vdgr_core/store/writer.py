"""Commit tables, indexes and shards as one index build (manifest last).

Tables are streamed into LanceDB from record batches (each write one table version; the driver
never holds a whole table); the vector and scalar indexes are built on the written versions;
then the manifest naming every version, shard and layout folder, with the additive digests of
every table and domain, is written whole. The build id is a digest of the table digests and
the BM25 shard digests: two commits of equal rows give equal build ids, however the rows were
produced.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Optional, Sequence

import pyarrow as pa

from schemas import tables as T
from schemas.config import StoreConfig
from vdgr_core.store import digest as dg
from vdgr_core.store.failpoints import TABLE_POINT, failpoint
from vdgr_core.store.lance_store import TableWrite, connect, has_table
from vdgr_core.store.layout_build import layout_options, write_layouts
from vdgr_core.store.manifest import CommitGuard, DomainInfo, Manifest, write_manifest
from vdgr_core.store.table_indexes import ensure_scalar_indexes, ensure_vector_index
from vdgr_core.store.tantivy_shard import ShardInfo


def table_digest(name: str, table: pa.Table) -> str:
    """Digest of a whole table's contents (order-independent): equal tables, equal digests."""
    return dg.table_digest(name, table)


def write_table_stream(db, name: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch],
                       mode: str = "overwrite") -> TableWrite:
    """Write ``batches`` as a new version of table ``name`` (``overwrite`` replaces its rows,
    ``append`` adds them), streaming: one batch in memory at a time. Returns the version and
    the rows written."""
    count = [0]

    def counted() -> Iterator[pa.RecordBatch]:
        for b in batches:
            count[0] += b.num_rows
            yield b

    reader = pa.RecordBatchReader.from_batches(schema, counted())
    if has_table(db, name):
        t = db.open_table(name)
        t.add(reader, mode=mode)
    else:
        t = db.create_table(name, data=reader, schema=schema)
    failpoint(TABLE_POINT.format(name))
    return TableWrite(name, t.version, count[0])


@dataclass
class CommitPlan:
    """Everything a manifest names, gathered while tables are written."""

    writes: dict[str, TableWrite] = field(default_factory=dict)
    digests: dict[str, dict[str, int]] = field(default_factory=dict)   # table -> domain -> digest
    shards: list[ShardInfo] = field(default_factory=list)
    subshards: dict[str, int] = field(default_factory=dict)
    layouts: dict = field(default_factory=dict)                        # domain -> LayoutRef
    vector_indexes: dict[str, dict] = field(default_factory=dict)


def build_indexes(db, plan: CommitPlan, store: StoreConfig, dim: int,
                  previous: Optional[Mapping[str, dict]] = None, *, vectors: bool = True) -> None:
    """Vector and scalar indexes on the tables just written; the plan then names the table
    versions the index builds committed. ``vectors=False``: the scalar indexes only (the
    caller builds the vector indexes, :func:`~vdgr_core.store.index_beside.vector_indexes_beside`,
    and passes their descriptions to :func:`adopt_vector_indexes`)."""
    for name, w in list(plan.writes.items()):
        if not has_table(db, name):
            continue
        table = db.open_table(name)
        if vectors:
            described = ensure_vector_index(name, table, store, w.rows, dim, (previous or {}).get(name))
            if described is not None:
                plan.vector_indexes[name] = described
        ensure_scalar_indexes(name, table, store, w.rows)
        if table.version != w.version:
            plan.writes[name] = TableWrite(name, table.version, w.rows)


def adopt_vector_indexes(db, plan: CommitPlan, described: Mapping[str, Optional[dict]]) -> None:
    """Name in ``plan`` the vector indexes built elsewhere and the table versions they committed."""
    for name, description in described.items():
        if description is not None:
            plan.vector_indexes[name] = description
        w = plan.writes[name]
        version = db.open_table(name).version
        if version != w.version:
            plan.writes[name] = TableWrite(name, version, w.rows)


def build_id_of(table_digests: Mapping[str, int], shards: Sequence[ShardInfo]) -> str:
    h = hashlib.sha256()
    for name in T.TABLES:
        h.update(f"{name}:{dg.to_hex(table_digests.get(name, 0))}".encode())
    for s in sorted(shards, key=lambda s: (s.domain, s.sub)):
        h.update(f"{s.domain}:{s.sub}:{s.digest}".encode())
    return h.hexdigest()[:32]


def write_plan_manifest(index_dir: str, plan: CommitPlan, *, embedding_model: str, dim: int,
                        domains: Sequence[DomainInfo], config: Optional[dict] = None,
                        parent_build_id: Optional[str] = None,
                        guard: Optional[CommitGuard] = None) -> Manifest:
    """Write the manifest of ``plan`` (the last write of a commit) and return it.

    ``guard`` is the writer's held index lock (:class:`CommitGuard`): the commit fails with
    :class:`ConcurrentCommitError` when the manifest moved since the lock was taken. Without
    one nothing is checked (``write_manifest``)."""
    totals = {name: dg.total(plan.digests.get(name, {})) for name in T.TABLES}
    by_domain: dict[str, dict[str, str]] = {}
    for name in T.TABLES:
        for domain, value in sorted(plan.digests.get(name, {}).items()):
            by_domain.setdefault(domain, {})[name] = dg.to_hex(value)
    shards: dict[str, list[ShardInfo]] = {}
    for s in sorted(plan.shards, key=lambda s: (s.domain, s.sub)):
        shards.setdefault(s.domain, []).append(s)
    manifest = Manifest(
        build_id=build_id_of(totals, plan.shards),
        table_versions={n: w.version for n, w in plan.writes.items()},
        tantivy_shards={d: tuple(v) for d, v in shards.items()},
        embedding_model=embedding_model,
        dim=dim,
        domains=tuple(sorted(domains, key=lambda d: d.name)),
        counts={n: w.rows for n, w in plan.writes.items()},
        config=dict(config or {}),
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        parent_build_id=parent_build_id,
        table_digests={n: dg.to_hex(v) for n, v in totals.items()},
        domain_digests=by_domain,
        subshards=dict(sorted(plan.subshards.items())),
        layouts=dict(sorted(plan.layouts.items())),
        vector_indexes=dict(sorted(plan.vector_indexes.items())),
    )
    manifest = write_manifest(index_dir, manifest, guard=guard)
    failpoint("commit.manifest_written")
    return manifest


def commit_index(
    index_dir: str,
    tables: Mapping[str, pa.Table],
    shards: Sequence[ShardInfo],
    *,
    embedding_model: str,
    dim: int,
    domains: Sequence[DomainInfo],
    config: Optional[dict] = None,
    parent_build_id: Optional[str] = None,
    store: Optional[StoreConfig] = None,
    guard: Optional[CommitGuard] = None,
) -> tuple[Manifest, dict[str, TableWrite]]:
    """Write whole in-memory tables (small indexes, tests), then the manifest naming them.

    Parameters
    ----------
    tables:
        One Arrow table per name in ``schemas.tables.TABLES`` (missing ones are written empty).
    shards:
        tantivy shards already published under ``index_dir`` (see ``build_shard``).
    guard:
        The held index lock (:class:`CommitGuard`) when the caller holds one; none: unchecked.

    Returns
    -------
    (Manifest, dict of TableWrite)
        The committed manifest and, per table, the version written and its row count.

    Raises
    ------
    ConcurrentCommitError
        When ``guard`` says the manifest changed since the index lock was taken (see
        ``write_manifest``).
    """
    db = connect(index_dir)
    plan = CommitPlan()
    for name in T.TABLES:
        schema = T.schema_for(name, dim)
        table = tables.get(name)
        table = pa.Table.from_pylist([], schema=schema) if table is None else table.select(schema.names).cast(schema)
        plan.writes[name] = write_table_stream(db, name, schema, table.to_batches())
        plan.digests[name] = dg.domain_digests(table) if table.num_rows else {}
    plan.shards = list(shards)
    build_indexes(db, plan, store or StoreConfig(), dim)
    domains_with_rows = sorted({d for name in (T.CONTENTS, T.DIRECTORIES) for d in plan.digests.get(name, {})})
    plan.layouts = write_layouts({n: db.open_table(n) for n in (T.CONTENTS, T.DIRECTORIES, T.ENTITIES, T.EDGES)},
                                 index_dir, domains_with_rows, layout_options(store or StoreConfig()))
    manifest = write_plan_manifest(index_dir, plan, embedding_model=embedding_model, dim=dim, domains=domains,
                                   config=config, parent_build_id=parent_build_id, guard=guard)
    return manifest, dict(plan.writes)
