"""Incremental update: recompute only the domains that changed, carry the rest over.

The unit of recomputation is the domain: entity statistics, co-occurrence weights, directory
summaries and the BM25 shard are all per domain, so recomputing the domains a change touches
(and keeping every other domain's rows and shard as they are) gives exactly the index a full
rebuild would give. Unchanged chunks cost no embedding (the embedding cache) and no LLM call
(the LLM cache), so a recomputed domain costs its parsing and annotation only.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from pipelines.commit import KeepFromIndex
from pipelines.run_build import BuildReport, config_summary, execute_build, run_build
from pipelines.update_plan import UpdatePlan, current_fingerprints, domain_of, plan_update
from schemas import tables as T
from schemas.config import BuildConfig
from schemas.errors import IndexError_
from vdgr_core.corpus import CorpusScan, scan_corpus
from vdgr_core.store.reader import IndexReader

_log = logging.getLogger("vdgr.update")


@dataclass(frozen=True)
class UpdateReport:
    plan: UpdatePlan
    build: Optional[BuildReport]       # None when nothing changed (no new manifest)
    wall_s: float


def run_update(config: BuildConfig, beam_args: Sequence[str] = (),
               progress: Optional[Callable[[str], None]] = None) -> UpdateReport:
    """Bring the index at ``config.index`` up to date with ``config.corpus``.

    Falls back to a full build when there is no committed index yet.
    """
    say = progress or (lambda s: _log.info(s))
    t0 = time.perf_counter()
    try:
        reader = IndexReader(config.index)
    except IndexError_:
        say("no committed index yet: running a full build")
        report = run_build(config, beam_args, progress)
        return UpdateReport(UpdatePlan((), (), (), (), tuple(d.name for d in report.manifest.domains)),
                            report, time.perf_counter() - t0)
    scan = scan_corpus(config.corpus)
    current = current_fingerprints(scan, config)
    plan = plan_update(reader.arrow(T.DOCUMENTS, ["path", "fingerprint", "content_hash"]).to_pylist(),
                       current, config_changed=reader.manifest.config != config_summary(config))
    say(plan.summary())
    if plan.empty:
        return UpdateReport(plan, None, time.perf_counter() - t0)
    affected = set(plan.affected_domains)
    sub = CorpusScan(tasks=tuple(t for t in scan.tasks if t.domain in affected),
                     skipped=tuple(p for p in scan.skipped if domain_of(p) in affected))
    report = execute_build(config, sub, scan, beam_args, say,
                           keep=KeepFromIndex(reader, tuple(sorted(affected))), t0=t0)
    return UpdateReport(plan, report, time.perf_counter() - t0)

