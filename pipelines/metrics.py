"""Beam metrics a pipeline run reports, read back by the driver."""
from __future__ import annotations

from apache_beam.metrics.metric import MetricsFilter

NAMESPACE = "vdgr"


def beam_counter(result, name: str) -> int:
    """The committed (else attempted) value of counter ``name`` of the ``vdgr`` namespace in
    the pipeline ``result``; -1 when the runner reports no metrics."""
    try:
        res = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE).with_name(name))
        return int(sum(c.committed or c.attempted or 0 for c in res["counters"]))
    except Exception:  # some runners do not report metrics
        return -1


__all__ = ["beam_counter", "NAMESPACE"]
