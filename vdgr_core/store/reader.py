"""Read side of the index: everything is opened through the manifest, pinned to its versions."""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from functools import cached_property
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from schemas import tables as T
from vdgr_core.store.filters import SearchScope
from vdgr_core.store.lance_store import connect, open_pinned
from vdgr_core.store.location import IndexLocation, shard_cache_dir
from vdgr_core.store.manifest import Manifest, read_manifest
from vdgr_core.store.tantivy_shard import MultiShardSearcher, ShardSearcher


class IndexReader:
    """A consistent, read-only view of one index build.

    Parameters
    ----------
    index_dir:
        The index folder or object-store URI. Only the tables and shards named by its manifest
        are read, at the versions the manifest names; a concurrent update never changes what
        this view sees. BM25 shards of a remote index are copied once into a local cache
        (``VDGR_SHARD_CACHE``, default ``~/.cache/vdgr/shards``): they are named by content.
    cache_bytes:
        Lance's cache sizes for this view (:func:`vdgr_core.store.lance_store.connect`):
        ``None`` (default) keeps Lance's defaults, for a query process; an update's driver
        passes ``DRIVER_CACHE_BYTES``.
    """

    def __init__(self, index_dir: str, cache_bytes: Optional[int] = None):
        self.index_dir = index_dir
        self.manifest: Manifest = read_manifest(index_dir)
        self._location = IndexLocation(index_dir)
        self._db = connect(index_dir, cache_bytes=cache_bytes)
        self._tables: dict[str, object] = {}
        self._arrow: dict[tuple, pa.Table] = {}
        self._shards: dict[str, ShardSearcher | MultiShardSearcher] = {}
        self._lock = threading.Lock()

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.manifest.domains)

    def table(self, name: str):
        """The LanceDB table ``name`` checked out at the manifest's version."""
        with self._lock:
            if name not in self._tables:
                self._tables[name] = open_pinned(self._db, name, self.manifest.table_versions[name])
            return self._tables[name]

    def arrow(self, name: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """The whole table as Arrow (cached per column set)."""
        key = (name, tuple(columns) if columns else None)
        if key not in self._arrow:
            t = self.table(name)
            data = t.to_arrow()
            self._arrow[key] = data.select(list(columns)) if columns else data
        return self._arrow[key]

    def shard(self, domain: str) -> "Optional[ShardSearcher | MultiShardSearcher]":
        """The BM25 searcher of ``domain`` (None if the domain has no content).

        A domain split into sub-shards (by size or by ACL set) gets one
        :class:`MultiShardSearcher` that searches those a caller may see together, with their
        term statistics; callers see one object either way.
        """
        shards = self.manifest.tantivy_shards.get(domain, ())
        if not shards:
            return None
        with self._lock:
            if domain not in self._shards:
                paths = [self._local_shard(s.folder) for s in shards]
                single = len(paths) == 1 and not shards[0].acl
                self._shards[domain] = (ShardSearcher(paths[0]) if single
                                        else MultiShardSearcher(paths, [s.acl for s in shards]))
            return self._shards[domain]

    def layout_folder(self, domain: str) -> str:
        """The local folder of ``domain``'s query layout (vdgr_core/store/domain_layout.py);
        a remote index's layout is copied once to a local cache. KeyError: no layout."""
        return self._local_shard(self.manifest.layouts[domain].folder)

    def block_file(self, rel: str) -> str:
        """The local path of the vector block ``rel`` (``vectors/<domain>/<digest>.npy``,
        vdgr_core/store/vector_blocks.py): in the index, or a cached copy of a remote one
        (blocks are named by their bytes, so a cached copy never goes stale)."""
        if not self._location.remote:
            return os.path.join(self.index_dir, *rel.split("/"))
        cached = os.path.join(shard_cache_dir(), *rel.split("/"))
        if not os.path.exists(cached):
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".fetching-", dir=os.path.dirname(cached))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(self._location.read_bytes(rel))
                os.replace(tmp, cached)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        return cached

    def _local_shard(self, rel: str) -> str:
        """A local folder holding shard ``rel``: in the index, or a cached copy of a remote one."""
        if not self._location.remote:
            return os.path.join(self.index_dir, rel)
        cached = os.path.join(shard_cache_dir(), *rel.split("/"))   # tantivy|layout/<domain>/<digest>
        if not os.path.isdir(cached):
            os.makedirs(os.path.dirname(cached), exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=".fetching-", dir=os.path.dirname(cached))
            try:
                os.rmdir(tmp)
                self._location.fetch_folder(rel, tmp)
                os.replace(tmp, cached)
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
                if not os.path.isdir(cached):   # another reader may have fetched it meanwhile
                    raise
        return cached

    def dense_search(self, name: str, vector: np.ndarray, k: int, scope: SearchScope,
                     columns: Optional[Sequence[str]] = None) -> pa.Table:
        """Nearest rows of ``name`` (directories or contents) to ``vector`` within ``scope``.

        The scope is a pre-filter: rows the caller may not see are never candidates.
        Returns an Arrow table with a ``_distance`` column (cosine distance), best first.
        """
        q = (self.table(name).search(np.asarray(vector, dtype=np.float32))
             .metric("cosine")
             .where(scope.lance_expr(), prefilter=True)
             .limit(k))
        if columns:
            q = q.select(list(columns))
        return q.to_arrow()

    @cached_property
    def dim(self) -> int:
        return self.manifest.dim


__all__ = ["IndexReader", "T"]
