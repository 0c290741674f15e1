"""Compare a corpus with the committed index: what was added, changed, deleted or moved."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from apache_beam.io.filesystems import FileSystems

from schemas.config import LimitsConfig
from transforms.read import open_read
from vdgr_core.corpus import CorpusScan
from vdgr_core.ids import content_hash
from vdgr_core.indexing.document import read_bytes_limited
from vdgr_core.indexing.fingerprint import skipped_fingerprint, task_fingerprint
from vdgr_core.store.file_stats import FileStatsCache, stat_rows, write_file_stats


@dataclass(frozen=True)
class UpdatePlan:
    """The changes found and the domains they touch (whose graph rows and shard are recomputed)."""

    added: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]
    moved: tuple[tuple[str, str], ...]      # (old path, new path) with equal bytes
    affected_domains: tuple[str, ...]
    config_changed: bool = False

    @property
    def empty(self) -> bool:
        return not self.affected_domains

    def summary(self) -> str:
        return (f"{len(self.added)} added, {len(self.changed)} changed, {len(self.deleted)} deleted, "
                f"{len(self.moved)} moved; changed domains: {', '.join(self.affected_domains) or 'none'}")


def current_fingerprints(scan: CorpusScan, limits: LimitsConfig,
                         stats_cache: Optional[FileStatsCache] = None) -> dict[str, tuple[str, str]]:
    """rel_path -> (fingerprint, content hash) of every file the build would see.

    A file whose size and mtime equal the ones cached when it was last hashed keeps that hash
    (``stats_cache``); the others are read, with the same size limit as the build, so a
    too-large file hashes the same way here and in its dead-letter row.
    """
    out: dict[str, tuple[str, str]] = {}
    for task in scan.tasks:
        size, mtime = scan.file_stats.get(task.rel_path, (0, 0))
        digest = stats_cache.content_hash(task.rel_path, size, mtime) if stats_cache is not None else None
        if digest is None:
            path = FileSystems.join(task.corpus_root, *task.rel_path.split("/"))
            try:
                data = read_bytes_limited(open_read, path, limits.max_file_bytes)
                digest = content_hash(data)
            except OSError:
                digest = ""
        out[task.rel_path] = (task_fingerprint(task, digest), digest)
    for rel in scan.skipped:
        letter = scan.dead_letter(rel)
        out[rel] = (skipped_fingerprint(rel, letter.reason, letter.detail), "")
    return out


def remember_file_stats(index: str, scan: CorpusScan, current: Mapping[str, tuple[str, str]],
                        plan: UpdatePlan) -> None:
    """Cache the size, mtime and hash of the files an update read (added and changed ones, and
    files whose mtime moved without a change), and forget the deleted ones."""
    cache = FileStatsCache(index)
    hashes = {p: h for p, (_, h) in current.items() if h and p in scan.file_stats
              and cache.content_hash(p, *scan.file_stats[p]) != h}
    write_file_stats(index, stat_rows(hashes, scan.file_stats, scan.listed_ns), forget=plan.deleted)


def domain_of(rel_path: str) -> str:
    """The domain a corpus-relative path belongs to ("" for files at the corpus root)."""
    return rel_path.split("/", 1)[0] if "/" in rel_path else ""


def plan_update(old: Iterable[Mapping], current: Mapping[str, tuple[str, str]],
                config_changed: bool = False) -> UpdatePlan:
    """Diff the committed documents rows (path, fingerprint, content_hash) with ``current``."""
    before = {r["path"]: (r["fingerprint"], r["content_hash"]) for r in old}
    added = sorted(set(current) - set(before))
    deleted = sorted(set(before) - set(current))
    changed = sorted(p for p in set(current) & set(before) if current[p][0] != before[p][0])
    by_hash_deleted = {before[p][1]: p for p in deleted if before[p][1]}
    moved = tuple(sorted((by_hash_deleted[current[p][1]], p) for p in added
                         if current[p][1] and current[p][1] in by_hash_deleted))
    touched = set(added) | set(deleted) | set(changed)
    domains = {domain_of(p) for p in touched}
    if config_changed:
        domains |= {domain_of(p) for p in set(current) | set(before)}
    return UpdatePlan(tuple(added), tuple(changed), tuple(deleted), moved,
                      tuple(sorted(domains)), config_changed)
