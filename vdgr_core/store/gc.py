"""Garbage collection of an index: what no manifest needs any more, once readers are done.

Every build and update adds LanceDB table versions and may publish new tantivy shard folders;
a crash can leave a staging folder or a half-built shard. ``collect_garbage`` removes, when
older than ``keep``: LanceDB versions other than the ones the current manifest names (and the
data files of fragments no version names, whatever their age: a crashed worker's), shard
and layout folders (and format 2 graph folders) the manifest does not name, vector block files
(``vectors/``) none of its layouts names, leftover ``.building-*`` shards and ``_staging`` runs.
``keep`` is the grace period for readers still pinned to an older manifest. LanceDB's
``optimize`` also compacts small fragments; when that commits a new version of a table the
manifest names (same rows), the manifest is rewritten, atomically, to name it.

It holds the index's writer lock (``store/lock.py``) throughout, so no build or update commits
meanwhile, and it writes its manifest only over the generation it read: it never replaces a
newer manifest.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import shutil
import time
import warnings
from dataclasses import dataclass

from schemas import tables as T
from schemas.errors import ConfigError
from vdgr_core.store.lance_store import connect, has_table
from vdgr_core.store.location import is_remote
from vdgr_core.store.lock import IndexLock
from vdgr_core.store.manifest import read_manifest, write_manifest
from vdgr_core.store.vector_blocks import blocks_named


@dataclass(frozen=True)
class GcReport:
    lance_versions_removed: int
    shard_folders_removed: int        # BM25 shard and layout folders
    staging_runs_removed: int
    vector_blocks_removed: int = 0    # vector block files no layout of the manifest names


def _older_than(path: str, keep_s: float) -> bool:
    return time.time() - os.path.getmtime(path) > keep_s


def collect_garbage(index_dir: str, keep: _dt.timedelta = _dt.timedelta(hours=1),
                    lock_timeout_s: float = 0.0) -> GcReport:
    """Remove what the current manifest does not need and is older than ``keep``.

    Parameters
    ----------
    lock_timeout_s:
        How long to wait for a build or update of the index to finish.

    Raises
    ------
    ConfigError
        For an object-store index: use the bucket's lifecycle rules for old shard folders and
        LanceDB's own cleanup there (not implemented here yet).
    IndexBusyError
        When another writer still holds the index after ``lock_timeout_s``.
    """
    if is_remote(index_dir):
        raise ConfigError(f"vdgr gc works on local index folders; {index_dir!r} is an object-store URI "
                          "(see docs/RUNNERS.md)")
    with IndexLock(index_dir, "vdgr gc", lock_timeout_s) as lock:
        return _collect_locked(index_dir, keep, lock)


def _collect_locked(index_dir: str, keep: _dt.timedelta, lock: IndexLock) -> GcReport:
    manifest = read_manifest(index_dir)
    db = connect(index_dir)
    versions = 0
    compacted: dict[str, int] = {}
    for name in (*T.TABLES, T.EMBEDDING_CACHE, T.FILE_STATS):
        if not has_table(db, name):
            continue
        table = db.open_table(name)
        if name in manifest.table_versions and table.version != manifest.table_versions[name]:
            continue  # a newer commit is in progress or landed after this manifest: leave it
        before = len(table.list_versions())
        with warnings.catch_warnings():  # the grace period is the caller's explicit choice
            warnings.simplefilter("ignore", UserWarning)
            # also compacts small fragments; ``delete_unverified``: data files no version names
            # (a crashed or retried worker's fragments) go too, whatever their age: no other
            # writer works on the index while this one holds its lock
            table.optimize(cleanup_older_than=keep, delete_unverified=True)
        versions += max(0, before - len(table.list_versions()))
        if name in manifest.table_versions and table.version != manifest.table_versions[name]:
            compacted[name] = table.version   # compaction committed a version with the same rows
    if compacted:
        write_manifest(index_dir, dataclasses.replace(
            manifest, table_versions={**manifest.table_versions, **compacted}),
            expect_generation=manifest.generation, guard=lock)
    keep_s = keep.total_seconds()
    live = {os.path.normpath(os.path.join(index_dir, f))
            for f in [*manifest.all_shard_folders(), *(ref.folder for ref in manifest.layouts.values())]}
    metas = []
    for ref in manifest.layouts.values():
        with open(os.path.join(index_dir, ref.folder, "meta.json"), encoding="utf-8") as f:
            metas.append(json.load(f))
    live |= {os.path.normpath(os.path.join(index_dir, rel)) for rel in blocks_named(metas)}
    shards = blocks = 0
    for kind in ("tantivy", "layout", "graph", "vectors"):   # BM25 sub-shards, layouts (graph: format 2's CSR folders)
        root = os.path.join(index_dir, kind)
        for domain in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            folder = os.path.join(root, domain)
            for shard in sorted(os.listdir(folder)):
                path = os.path.normpath(os.path.join(folder, shard))
                if path in live or not _older_than(path, keep_s):
                    continue
                if kind == "vectors":              # a block file (or a temporary one a crash left)
                    os.remove(path)
                    blocks += 1
                else:
                    shutil.rmtree(path, ignore_errors=True)
                    shards += 1
    runs = 0
    staging = os.path.join(index_dir, "_staging")
    for run in sorted(os.listdir(staging)) if os.path.isdir(staging) else []:
        path = os.path.join(staging, run)
        if _older_than(path, keep_s):
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:           # an embedding journal a killed build left (runners/early_embedder.py)
                os.remove(path)
            runs += 1
    return GcReport(versions, shards, runs, blocks)
