"""Incremental update: find what changed, apply it document by document, commit a new manifest.

Only the arriving documents are parsed, annotated and embedded; entity statistics, co-occurrence
weights, merged directory nodes, summaries of the touched nodes and their ancestors, and the BM25
shards of the changed domains are recomputed from the stored rows (pipelines/delta_update.py).
When the build settings changed, every affected domain is rebuilt by the full pipeline instead and
when the index was written by an older version, the whole index is built again. Either way the result equals a full rebuild
(tests/pipelines/test_update_property.py). Unchanged chunks cost no embedding (the embedding cache)
and no LLM call (the LLM cache).
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from pipelines.delta_update import apply_document_delta, stale_layouts, stale_shards
from pipelines.options import use_filesystem_options
from pipelines.run_build import BuildReport, execute_build, run_build, with_precision
from pipelines.update_plan import UpdatePlan, current_fingerprints, plan_update, remember_file_stats
from schemas import tables as T
from schemas.config import BuildConfig, check_settings
from schemas.errors import IndexError_
from vdgr_core.corpus import scan_corpus
from vdgr_core.embedding import embedder_identity
from vdgr_core.progress import plural
from vdgr_core.safety import content_rules
from vdgr_core.store.file_stats import FileStatsCache
from vdgr_core.store.lance_store import DRIVER_CACHE_BYTES
from vdgr_core.store.lock import IndexLock
from vdgr_core.store.reader import IndexReader

_log = logging.getLogger("vdgr.update")


def _stores_update_columns(reader: IndexReader) -> bool:
    """True when every stored table has every column this version writes: a row-level update
    appends rows of the current schemas, so an index written before a column existed (``page``,
    ``flags``, ``terms``, ``sources``...) is rebuilt instead."""
    for name in T.TABLES:
        if name not in reader.manifest.table_versions:
            return False
        stored = set(reader.table(name).schema.names)
        if not set(T.schema_for(name, reader.dim).names) <= stored:
            return False
    return True


@dataclass(frozen=True)
class UpdateReport:
    plan: UpdatePlan
    build: Optional[BuildReport]       # None when nothing changed (no new manifest)
    wall_s: float


def run_update(config: BuildConfig, beam_args: Sequence[str] = (),
               progress: Optional[Callable[[str], None]] = None, *,
               settings_change: bool = False) -> UpdateReport:
    """Bring the index at ``config.index`` up to date with ``config.corpus``.

    Falls back to a full build when there is no committed index yet.

    Parameters
    ----------
    settings_change:
        Allow build settings other than the recorded ones (every domain is rebuilt with them).
        Without it, different settings raise :class:`SettingsChangeError`; use
        ``BuildConfig.from_settings(manifest.config, ...)`` to update with the recorded ones.

    Raises
    ------
    IndexBusyError
        When another build, update or gc holds the index after ``config.lock_timeout_s``.
    """
    say = progress or (lambda s: _log.info(s))
    t0 = time.perf_counter()
    use_filesystem_options(beam_args)
    with IndexLock(config.index, "vdgr update", config.lock_timeout_s) as lock:
        return _update_locked(config, beam_args, progress, say, t0, settings_change, lock)


def _update_locked(config: BuildConfig, beam_args: Sequence[str], progress, say, t0: float,
                   settings_change: bool, lock: IndexLock) -> UpdateReport:
    """The update, once this process holds the index lock (the manifest read is the latest);
    its commit passes ``lock`` to ``write_manifest`` as the commit guard."""
    try:
        reader = IndexReader(config.index, cache_bytes=DRIVER_CACHE_BYTES)
    except IndexError_:
        say("no committed index yet: running a full build")
        report = run_build(config, beam_args, progress)
        return UpdateReport(UpdatePlan((), (), (), (), tuple(d.name for d in report.manifest.domains)),
                            report, time.perf_counter() - t0)
    config = with_precision(config, reader.manifest.config)
    config_changed = check_settings(reader.manifest.config, config, settings_change, content_rules())
    model_id = embedder_identity(config.embedding)[0]
    if reader.manifest.embedding_model != model_id:
        # same settings, vectors computed another way (a release that changed the embedder's
        # numerics): kept vectors would differ from a rebuild's in their last bits
        say(f"the index's vectors are {reader.manifest.embedding_model}; this version computes "
            f"{model_id}")
        config_changed = True
    scan = scan_corpus(config.corpus, max_depth=config.limits.max_folder_depth)
    current = current_fingerprints(scan, config.limits, FileStatsCache(config.index))
    plan = plan_update(reader.arrow(T.DOCUMENTS, ["path", "fingerprint", "content_hash"]).to_pylist(),
                       current, config_changed=config_changed)
    say(plan.summary())
    stale = sorted(set(stale_layouts(reader)) | set(stale_shards(reader)))
    if plan.empty and not stale:
        remember_file_stats(config.index, scan, current, plan)
        return UpdateReport(plan, None, time.perf_counter() - t0)
    if plan.empty:
        say(f"no document changed; writing the query layouts and BM25 shards of {plural(len(stale), 'domain')} "
            "in this version's formats")
    if not plan.config_changed and reader.manifest.incremental and _stores_update_columns(reader):
        report = apply_document_delta(config, reader, plan, scan, beam_args, say, t0, guard=lock)
    else:
        # new settings, or an index written by an older version (no per-domain digests): the
        # whole index is built again by the pipeline
        say("rebuilding every domain: " + ("the build settings (content rules, embedder) changed" if plan.config_changed
                                           else "the index was written by an older version"))
        report = execute_build(config, scan, beam_args, say, guard=lock, parent_build_id=reader.manifest.build_id,
                               t0=t0)
    remember_file_stats(config.index, scan, current, plan)
    return UpdateReport(plan, report, time.perf_counter() - t0)
