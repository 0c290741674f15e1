"""`vdgr watch`: a Beam streaming pipeline that applies corpus changes in micro-batches.

A ``PeriodicImpulse`` fires every ``interval`` seconds; each firing scans the corpus, diffs it
against the committed index and, when something changed, runs the incremental update (itself
a Beam pipeline, on the runner the user chose) and commits a new manifest. Bounded by
``max_polls`` or ``until`` for tests and scheduled jobs.

The ticking pipeline itself always runs in this process (FnApiRunner, streaming): it is a
scheduler, not where the work happens. Each firing's update pipeline gets the user's Beam
options, so the work scales out like ``vdgr update``. Beam pickles every DoFn, so results
cannot come back through a closure: each firing writes its :class:`PollResult` as JSON into a
run folder that :func:`run_watch` reads once the pipeline has finished, and ``on_poll`` is
called right after that firing's update, before the next firing is processed.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional, Sequence

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

    def __init__(self, config: BuildConfig, update_args: Sequence[str], results_dir: Optional[str],
                 on_poll: Optional[Callable[[PollResult], None]], settings_change: bool = False):
        self._config = config
        self._settings_change = settings_change
        self._args = tuple(update_args)
        self._results_dir = results_dir
        self._on_poll = on_poll

    def process(self, fired_at):
        from pipelines.run_update import run_update
        from schemas.errors import IndexBusyError

        try:
            report = run_update(self._config, self._args, settings_change=self._settings_change)
        except IndexBusyError as e:       # another writer: this firing's changes wait for the next
            result = PollResult(float(fired_at), f"skipped: {e}", None)
        else:
            build_id = report.build.manifest.build_id if report.build else None
            result = PollResult(float(fired_at), report.plan.summary(), build_id)
        if self._results_dir:
            name = os.path.join(self._results_dir, f"poll-{result.fired_at:.6f}.json")
            with open(name + ".tmp", "w", encoding="utf-8") as f:
                json.dump(asdict(result), f)
            os.replace(name + ".tmp", name)
        if self._on_poll is not None:
            self._on_poll(result)
        yield result


class WatchCorpus(beam.PTransform):
    """Periodic impulses -> applied updates (one PollResult per firing)."""

    def __init__(self, config: BuildConfig, *, interval_s: float, start: float, stop: float,
                 update_args: Sequence[str] = (), results_dir: Optional[str] = None,
                 on_poll: Optional[Callable[[PollResult], None]] = None, settings_change: bool = False):
        super().__init__()
        self._settings_change = settings_change
        self._config, self._interval, self._start, self._stop = config, interval_s, start, stop
        self._update_args = update_args
        self._results_dir = results_dir
        self._on_poll = on_poll

    def expand(self, pbegin):
        return (pbegin
                | "Tick" >> PeriodicImpulse(start_timestamp=self._start, stop_timestamp=self._stop,
                                            fire_interval=self._interval, apply_windowing=False)
                | "Apply changes" >> beam.ParDo(_ApplyChangesDoFn(
                    self._config, self._update_args, self._results_dir, self._on_poll,
                    self._settings_change)))


def run_watch(config: BuildConfig, *, interval_s: float, max_polls: Optional[int] = None,
              until: Optional[float] = None, beam_args: Sequence[str] = (),
              on_poll: Optional[Callable[[PollResult], None]] = None,
              settings_change: bool = False) -> list[PollResult]:
    """Watch ``config.corpus`` until ``max_polls`` firings or the ``until`` timestamp.

    Parameters
    ----------
    settings_change:
        Allow build settings other than the index's recorded ones (the first firing rebuilds
        every domain with them); otherwise they raise ``SettingsChangeError``.
    beam_args:
        Beam options for each firing's update pipeline (``vdgr update``'s flags).
    on_poll:
        Called with each :class:`PollResult` as soon as that firing's update is committed (it is
        pickled with the pipeline: side effects only, no state to read back).

    Returns
    -------
    list of PollResult
        One per firing, oldest first. A firing that falls behind (an update slower than
        ``interval_s``) is processed late, not skipped.
    """
    if interval_s <= 0:
        raise ValueError("watch needs a positive interval")
    if max_polls is None and until is None:
        raise ValueError("watch needs --max-polls or --until (run it under a scheduler otherwise)")
    if max_polls is not None and max_polls < 1:
        raise ValueError("max_polls must be at least 1")
    start = time.time()
    stop = until if until is not None else start + interval_s * max_polls - interval_s / 2
    if max_polls is not None:
        stop = min(stop, start + interval_s * max_polls - interval_s / 2)
    results_dir = tempfile.mkdtemp(prefix="vdgr-watch-")
    try:
        with beam.Pipeline(options=pipeline_options(["--streaming"])) as p:
            _ = p | "Watch corpus" >> WatchCorpus(config, interval_s=interval_s, start=start, stop=stop,
                                                  update_args=beam_args, results_dir=results_dir,
                                                  on_poll=on_poll, settings_change=settings_change)
        results = []
        for name in sorted(os.listdir(results_dir)):
            if name.endswith(".json"):
                with open(os.path.join(results_dir, name), encoding="utf-8") as f:
                    results.append(PollResult(**json.load(f)))
    finally:
        shutil.rmtree(results_dir, ignore_errors=True)
    return sorted(results, key=lambda r: r.fired_at)
