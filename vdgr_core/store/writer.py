"""The one commit of a build or an update: tables, indexes, embedding cache, manifest last.

Whoever made the rows wrote them already, as Lance fragments in the tables' folders (a build's
workers; an update's driver, for the few rows it changes: vdgr_core/store/fragments.py), and so
are the BM25 sub-shards and the query layouts, each under its digest. A :class:`CommitPlan`
names all of it; :func:`commit` makes it one index:

1. each table gets one metadata-only Lance operation naming its fragments: an ``Overwrite``
   for a build; for an update, an ``Update`` that deletes the rows whose key leaves (deletion
   files written by :func:`_deletions`) and adds the new fragments, on the version the previous
   manifest names;
2. the embedding cache gets the new vectors' fragments (an ``Append``; a cache, outside the
   index contract);
3. the indexes due on the new versions are built as segments (vdgr_core/store/table_indexes.py)
   by the caller's ``build_segments`` (Beam workers, or this process) and named in one more
   metadata-only commit per table;
4. the manifest naming every table version, shard and layout, with the digests, is written
   whole, checked by the writer lock's guard.

The build id is a digest of the table digests and the BM25 shard digests: two commits of equal
rows give equal build ids, however the rows were produced.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

import pyarrow as pa

from schemas import tables as T
from schemas.config import StoreConfig
from vdgr_core.store import digest as dg
from vdgr_core.store.domain_layout import LayoutRef
from vdgr_core.store.failpoints import TABLE_POINT, failpoint
from vdgr_core.store.fragments import lance_module, fragment_metadata, table_uri
from vdgr_core.store.lance_store import TableWrite, storage_options
from vdgr_core.store.location import IndexLocation
from vdgr_core.store.manifest import CommitGuard, DomainInfo, Manifest, write_manifest
from vdgr_core.store.table_indexes import (VECTOR_INDEX, IndexTask, build_segments_here, commit_segments,
                                           describe_vector_index, index_tasks, vector_params)
from vdgr_core.store.tantivy_shard import ShardInfo

#: keys per deletion predicate
_IN_CHUNK = 4000
#: where a commit keeps what its index segments share (the IVF centroids) until it ends
_SCRATCH = "_staging/commit"


def table_digest(name: str, table: pa.Table) -> str:
    """Digest of a whole table's contents (order-independent): equal tables, equal digests."""
    return dg.table_digest(name, table)


@dataclass(frozen=True)
class TableChange:
    """One table's part of a commit: the fragments that add its new rows (Lance metadata as
    JSON texts) and the rows they hold; for an update, the rows whose ``delete_key`` is one of
    ``delete_keys`` go."""

    fragments: tuple[str, ...] = ()
    rows: int = 0
    delete_key: str = ""
    delete_keys: tuple[str, ...] = ()


@dataclass
class CommitPlan:
    """Everything one commit names, whoever wrote it.

    ``base`` is the manifest an update applies its changes to (each table's rows are its
    version's, less the deleted, plus the added); ``None`` for a build, whose fragments are
    each table's whole rows. ``digests`` are per table and domain (vdgr_core/store/digest.py).
    """

    tables: dict[str, TableChange]
    digests: dict[str, dict[str, int]]
    shards: list[ShardInfo]
    subshards: dict[str, int]
    layouts: dict[str, LayoutRef]
    domains: list[DomainInfo]
    embedding_model: str
    dim: int
    settings: dict = field(default_factory=dict)
    base: Optional[Manifest] = None
    parent_build_id: Optional[str] = None
    cache_fragments: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpdateWrites:
    """Rows each table lost and gained in a commit (what the tests count against a rewrite)."""

    deleted: dict[str, int] = field(default_factory=dict)
    added: dict[str, int] = field(default_factory=dict)


#: ``build_segments(index_uri, tasks) -> one pickled segment per task``: where indexes are built
SegmentBuilder = Callable[[str, Sequence[IndexTask]], list]


def commit(index_uri: str, plan: CommitPlan, store: StoreConfig, *, guard: Optional[CommitGuard],
           build_segments: SegmentBuilder = build_segments_here) -> tuple[Manifest, UpdateWrites]:
    """Commit ``plan`` (see the module docstring) and return the manifest written, and the rows
    each table lost and gained.

    Raises
    ------
    ConcurrentCommitError
        When ``guard`` (the held index lock) says the manifest moved since it was taken.
    """
    writes, counts = {}, UpdateWrites()
    for name in T.TABLES:
        change = plan.tables.get(name, TableChange())
        writes[name], counts.deleted[name] = _commit_table(index_uri, name, T.schema_for(name, plan.dim), change,
                                                           plan.base)
        counts.added[name] = change.rows
        failpoint(TABLE_POINT.format(name))
    cache = _append_cache(index_uri, plan)
    writes, vector_indexes = _indexes(index_uri, writes, plan, store, cache, build_segments)
    manifest = write_manifest(index_uri, _manifest(plan, writes, vector_indexes), guard=guard)
    failpoint("commit.manifest_written")
    return manifest, counts


def _dataset(index_uri: str, name: str):
    """The latest version of table ``name``, or None when it has none."""
    lance = lance_module()
    try:
        return lance.dataset(table_uri(index_uri, name), storage_options=storage_options(str(index_uri)) or None)
    except (ValueError, FileNotFoundError, OSError):
        return None


def _commit(index_uri: str, name: str, operation, read_version: Optional[int]):
    lance = lance_module()
    return lance.LanceDataset.commit(table_uri(index_uri, name), operation, read_version=read_version,
                                     storage_options=storage_options(str(index_uri)) or None)


def _commit_table(index_uri: str, name: str, schema: pa.Schema, change: TableChange,
                  base: Optional[Manifest]) -> tuple[TableWrite, int]:
    """One metadata-only operation on table ``name``: its new version and the rows it deleted."""
    lance = lance_module()
    fragments = fragment_metadata(change.fragments)
    ds = _dataset(index_uri, name)
    if base is None:
        ds = _commit(index_uri, name, lance.LanceOperation.Overwrite(schema, fragments),
                     ds.version if ds is not None else None)
        return TableWrite(name, ds.version, change.rows), 0
    version = base.table_versions[name]
    if ds.version != version:            # a newer version a crashed update left: back to the manifest's
        ds = ds.checkout_version(version)
        ds.restore()
    removed, updated, deleted = _deletions(ds, change.delete_key, change.delete_keys)
    if removed or updated or fragments:
        ds = _commit(index_uri, name, lance.LanceOperation.Update(
            removed_fragment_ids=removed, updated_fragments=updated, new_fragments=fragments), ds.version)
    return TableWrite(name, ds.version, ds.count_rows()), deleted


def _quoted(values: Sequence[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def _deletions(ds, key: str, keys: Sequence[str]) -> tuple[list[int], list, int]:
    """The rows of ``ds`` whose ``key`` is in ``keys``, deleted fragment by fragment (deletion
    files written, nothing committed): (fragments left empty, fragments with new deletions,
    rows deleted)."""
    if not keys:
        return [], [], 0
    keys = sorted(set(keys))
    by_fragment: dict[int, list[str]] = {}
    for start in range(0, len(keys), _IN_CHUNK):
        found = ds.scanner(columns=[key], filter=f"{key} IN ({_quoted(keys[start:start + _IN_CHUNK])})",
                           with_row_address=True).to_table()
        for addr, value in zip(found.column("_rowaddr").to_pylist(), found.column(key).to_pylist()):
            by_fragment.setdefault(addr >> 32, []).append(value)
    removed, updated, deleted = [], [], 0
    for fid, values in sorted(by_fragment.items()):
        deleted += len(values)
        values = sorted(set(values))
        fragment, metadata = ds.get_fragment(fid), None
        for start in range(0, len(values), _IN_CHUNK):
            metadata = fragment.delete(f"{key} IN ({_quoted(values[start:start + _IN_CHUNK])})")
            if metadata is None:
                break
            fragment = lance_module().fragment.LanceFragment(ds, fid, fragment=metadata)
        if metadata is None:
            removed.append(fid)
        else:
            updated.append(metadata)
    return removed, updated, deleted


def _append_cache(index_uri: str, plan: CommitPlan) -> Optional[TableWrite]:
    """The embedding cache with the plan's new vectors (an ``Append``; an ``Overwrite`` creates
    the table); None when it has no new rows."""
    lance = lance_module()
    fragments = fragment_metadata(plan.cache_fragments)
    if not fragments:
        failpoint("commit.cache_written")
        return None
    ds = _dataset(index_uri, T.EMBEDDING_CACHE)
    operation = (lance.LanceOperation.Append(fragments) if ds is not None
                 else lance.LanceOperation.Overwrite(T.embedding_cache_schema(plan.dim), fragments))
    ds = _commit(index_uri, T.EMBEDDING_CACHE, operation, ds.version if ds is not None else None)
    failpoint("commit.cache_written")
    return TableWrite(T.EMBEDDING_CACHE, ds.version, ds.count_rows())


def _indexes(index_uri: str, writes: dict[str, TableWrite], plan: CommitPlan, store: StoreConfig,
             cache: Optional[TableWrite], build_segments: SegmentBuilder) -> tuple[dict[str, TableWrite], dict]:
    """Build the indexes due on the written versions and commit them; the versions afterwards
    and the vector indexes' descriptions."""
    loc = IndexLocation(index_uri)
    scratch = lambda name: f"{_SCRATCH}/{name}-centroids.npy"  # noqa: E731
    targets = [*writes.values(), *([cache] if cache is not None else [])]
    tasks = [t for w in targets for t in index_tasks(index_uri, w.name, w.version, store, plan.dim,
                                                     centroids_rel=scratch)]
    try:
        segments = build_segments(index_uri, tasks) if tasks else []
    finally:
        for task in tasks:
            if task.centroids:
                loc.delete(task.centroids)
    out = dict(writes)
    previous = plan.base.vector_indexes if plan.base is not None else {}
    described = {}
    for w in targets:
        mine = [(t, s) for t, s in zip(tasks, segments) if t.table == w.name]
        version = commit_segments(index_uri, w.name, w.version, [t for t, _ in mine], [s for _, s in mine])
        if w.name not in writes:
            continue
        out[w.name] = TableWrite(w.name, version, w.rows)
        rebuilt = [t for t, _ in mine if t.name == VECTOR_INDEX]
        params = dict(rebuilt[0].params) if rebuilt else previous.get(w.name, {}).get(
            "params", vector_params(store, w.rows, plan.dim))
        description = describe_vector_index(index_uri, w.name, version, params)
        if description is not None:
            described[w.name] = description
    return out, described


def build_id_of(table_digests: Mapping[str, int], shards: Sequence[ShardInfo]) -> str:
    h = hashlib.sha256()
    for name in T.TABLES:
        h.update(f"{name}:{dg.to_hex(table_digests.get(name, 0))}".encode())
    for s in sorted(shards, key=lambda s: (s.domain, s.sub)):
        h.update(f"{s.domain}:{s.sub}:{s.digest}".encode())
    return h.hexdigest()[:32]


def _manifest(plan: CommitPlan, writes: Mapping[str, TableWrite], vector_indexes: Mapping[str, dict]) -> Manifest:
    totals = {name: dg.total(plan.digests.get(name, {})) for name in T.TABLES}
    by_domain: dict[str, dict[str, str]] = {}
    for name in T.TABLES:
        for domain, value in sorted(plan.digests.get(name, {}).items()):
            by_domain.setdefault(domain, {})[name] = dg.to_hex(value)
    shards: dict[str, list[ShardInfo]] = {}
    for s in sorted(plan.shards, key=lambda s: (s.domain, s.sub)):
        shards.setdefault(s.domain, []).append(s)
    return Manifest(
        build_id=build_id_of(totals, plan.shards),
        table_versions={n: w.version for n, w in writes.items()},
        tantivy_shards={d: tuple(v) for d, v in shards.items()},
        embedding_model=plan.embedding_model,
        dim=plan.dim,
        domains=tuple(sorted(plan.domains, key=lambda d: d.name)),
        counts={n: w.rows for n, w in writes.items()},
        config=dict(plan.settings),
        created_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        parent_build_id=plan.parent_build_id,
        table_digests={n: dg.to_hex(v) for n, v in totals.items()},
        domain_digests=by_domain,
        subshards=dict(sorted(plan.subshards.items())),
        layouts=dict(sorted(plan.layouts.items())),
        vector_indexes=dict(sorted(vector_indexes.items())),
    )


def fragment_rows(texts: Sequence[str]) -> int:
    """Rows of fragments given as JSON texts (what their metadata says)."""
    return sum(int(json.loads(t)["physical_rows"]) for t in texts)


__all__ = ["CommitPlan", "SegmentBuilder", "TableChange", "UpdateWrites", "build_id_of", "commit",
           "fragment_rows", "table_digest"]
