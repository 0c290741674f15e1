"""pipelines/metrics.py: the driver reads the ``vdgr`` counters of a pipeline run."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from pipelines.metrics import NAMESPACE, beam_counter


class _Count(beam.DoFn):
    def __init__(self):
        self._seen = Metrics.counter(NAMESPACE, "seen")

    def process(self, x):
        self._seen.inc()
        yield x


def test_beam_counter_reads_a_run_and_reports_minus_one_without_metrics():
    p = beam.Pipeline()
    _ = p | beam.Create([1, 2, 3]) | beam.ParDo(_Count())
    result = p.run()
    result.wait_until_finish()
    assert beam_counter(result, "seen") == 3
    assert beam_counter(result, "never_counted") == 0

    class NoMetrics:
        def metrics(self):
            raise NotImplementedError

    assert beam_counter(NoMetrics(), "seen") == -1
