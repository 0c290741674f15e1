"""bench_cluster's block: one row per size and mode, worker peak only where pools ran."""
from __future__ import annotations

from bench.performance.bench_cluster import render
from bench.report.update_benchmarks_md import RENDERERS


def test_the_cluster_block_has_a_row_per_mode():
    rows = [{"size": "2k", "mode": m, "wall_s": w, "stages_s": {"pipeline_s": w - 1, "commit_s": 1.0},
             "speedup_vs_1_pool": round(20.0 / w, 2), "speedup_vs_in_process_s3": round(24.0 / w, 2),
             "driver_peak_mb": 400, "worker_peak_mb": wp, "chunks": 2048}
            for m, w, wp in (("in-process, local", 8.0, None), ("in-process, S3", 24.0, None),
                             ("1 pool", 20.0, 350), ("2 pools", 12.5, 340))]
    text = render({"command": "python -m bench.performance.bench_cluster --sizes 2k", "commit": "abc1234",
                   "date": "2026-12-04 04:00 UTC", "machine": {"nproc": 2, "uname": "Linux x"},
                   "results": rows})
    table = [ln for ln in text.splitlines() if ln.startswith("| 2k |")]
    assert len(table) == 4
    assert table[3] == "| 2k | 2,048 | 2 pools | 12.5 | 11.5 | 1.0 | 1.6 | 1.92 | 400 | 340 |"
    assert table[0].endswith("| 400 |  |")                     # no pools, no worker figure
    assert "abc1234" in text and RENDERERS["cluster"] == "bench.performance.bench_cluster"
