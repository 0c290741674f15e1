"""Commit a set of finished tables and shards as one index build (manifest last)."""
from __future__ import annotations

import datetime as _dt
import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Mapping, Optional, Sequence

import pyarrow as pa

from schemas import tables as T
from vdgr_core.store.failpoints import TABLE_POINT, failpoint
from vdgr_core.store.lance_store import TableWrite, connect, sort_rows, write_table
from vdgr_core.store.manifest import DomainInfo, Manifest, write_manifest
from vdgr_core.store.tantivy_shard import ShardInfo


def table_digest(name: str, table: pa.Table) -> str:
    """Digest of a table's contents (rows sorted by key): equal tables, equal digests."""
    return _sorted_digest(name, sort_rows(name, table))


def _sorted_digest(name: str, table: pa.Table) -> str:
    h = hashlib.sha256(name.encode())
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table.combine_chunks() if table.num_rows else table)
    h.update(sink.getvalue().to_pybytes())
    return h.hexdigest()


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
) -> tuple[Manifest, dict[str, TableWrite]]:
    """Write every table of the index contract, then the manifest naming their versions.

    Parameters
    ----------
    tables:
        One Arrow table per name in ``schemas.tables.TABLES`` (missing ones are written empty).
    shards:
        tantivy shards already published under ``index_dir`` (see ``build_shard``).

    Returns
    -------
    (Manifest, dict of TableWrite)
        The committed manifest and, per table, the version written and its row count.

    Raises
    ------
    ConcurrentCommitError
        When the manifest changed since the index lock was taken (see ``write_manifest``).
    """
    db = connect(index_dir)

    def write_one(name: str) -> tuple[TableWrite, str]:
        table = tables.get(name)
        if table is None:
            table = pa.Table.from_pylist([], schema=T.schema_for(name, dim))
        table = sort_rows(name, table)           # once: the digest and the write share it
        written = write_table(db, name, table, presorted=True)
        failpoint(TABLE_POINT.format(name))
        return written, _sorted_digest(name, table)

    # the tables are independent and LanceDB, Arrow and hashlib release the GIL on large data
    with ThreadPoolExecutor(max_workers=len(T.TABLES), thread_name_prefix="vdgr-commit") as pool:
        done = dict(zip(T.TABLES, pool.map(write_one, T.TABLES)))
    writes: dict[str, TableWrite] = {name: done[name][0] for name in T.TABLES}
    digest = hashlib.sha256()
    for name in T.TABLES:
        digest.update(done[name][1].encode())
    for s in sorted(shards, key=lambda s: s.domain):
        digest.update(f"{s.domain}:{s.digest}".encode())
    manifest = Manifest(
        build_id=digest.hexdigest()[:32],
        table_versions={n: w.version for n, w in writes.items()},
        tantivy_shards={s.domain: s.folder for s in shards},
        embedding_model=embedding_model,
        dim=dim,
        domains=tuple(sorted(domains, key=lambda d: d.name)),
        counts={n: w.rows for n, w in writes.items()},
        config=dict(config or {}),
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        parent_build_id=parent_build_id,
    )
    manifest = write_manifest(index_dir, manifest)
    failpoint("commit.manifest_written")
    return manifest, writes
