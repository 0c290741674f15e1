"""`vdgr watch`: a Beam streaming pipeline that applies corpus changes in micro-batches.

A ``PeriodicImpulse`` fires every ``interval`` seconds; each firing scans the corpus, diffs it
against the committed index and, when something changed, runs the incremental update (itself
a Beam pipeline) and commits a new manifest. Bounded by ``max_polls`` or ``until`` for tests and
scheduled jobs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Sequence

import apache_beam as beam
from apache_beam.transforms.periodicsequence import PeriodicImpulse

from pipelines.options import pipeline_options
from schemas.config import BuildConfig


@dataclass(frozen=True)
class PollResult:
    fired_at: float
    summary: str
    build_id: Optional[str]


class _ApplyChangesDoFn(beam.DoFn):
    """One micro-batch: plan and apply the changes found at this tick."""

    def __init__(self, config: BuildConfig, update_args: Sequence[str]):
        self._config = config
        self._args = tuple(update_args)

    def process(self, fired_at):
        from pipelines.run_update import run_update

        report = run_update(self._config, self._args)
        build_id = report.build.manifest.build_id if report.build else None
        yield PollResult(float(fired_at), report.plan.summary(), build_id)


class WatchCorpus(beam.PTransform):
    """Periodic impulses -> applied updates (one PollResult per firing)."""

    def __init__(self, config: BuildConfig, *, interval_s: float, start: float, stop: float,
                 update_args: Sequence[str] = ()):
        super().__init__()
        self._config, self._interval, self._start, self._stop = config, interval_s, start, stop
        self._update_args = update_args

    def expand(self, pbegin):
        return (pbegin
                | "Tick" >> PeriodicImpulse(start_timestamp=self._start, stop_timestamp=self._stop,
                                            fire_interval=self._interval, apply_windowing=False)
                | "Apply changes" >> beam.ParDo(_ApplyChangesDoFn(self._config, self._update_args)))


def run_watch(config: BuildConfig, *, interval_s: float, max_polls: Optional[int] = None,
              until: Optional[float] = None, beam_args: Sequence[str] = (), on_poll=None) -> list[PollResult]:
    """Watch ``config.corpus`` until ``max_polls`` firings or the ``until`` timestamp."""
    if max_polls is None and until is None:
        raise ValueError("watch needs --max-polls or --until (run it under a scheduler otherwise)")
    start = time.time()
    stop = until if until is not None else start + interval_s * max_polls - interval_s / 2
    if max_polls is not None:
        stop = min(stop, start + interval_s * max_polls - interval_s / 2)
    results: list[PollResult] = []

    def collect(r: PollResult):
        results.append(r)
        if on_poll:
            on_poll(r)

    with beam.Pipeline(options=pipeline_options(list(beam_args) + ["--streaming"])) as p:
        _ = (p | "Watch corpus" >> WatchCorpus(config, interval_s=interval_s, start=start, stop=stop)
             | "Report" >> beam.Map(collect))
    return sorted(results, key=lambda r: r.fired_at)
