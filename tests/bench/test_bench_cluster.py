"""bench_cluster's block: one row per size and mode, worker figures only where pools ran, the
issue-46 goals under the table; py-spy's raw stacks summarized."""
from __future__ import annotations

from bench.performance.bench_cluster import RequestLog, render, summarize
from bench.report.update_benchmarks_md import RENDERERS


def _rows(size, chunks, walls, driver_mb=400):
    out = []
    for m, w, wp in (("in-process, local", walls[0], None), ("in-process, S3", walls[1], None),
                     ("1 pool", walls[2], 350), ("2 pools", walls[3], 340)):
        pooled = "pool" in m
        out.append({"size": size, "mode": m, "wall_s": w, "chunks": chunks,
                    "stages_s": {"pipeline_s": w - 2, "index_segments_s": 0.5, "commit_s": 1.5},
                    "driver_commit_s": 1.0 if pooled else 1.5, "commit_share": round(1.5 / w, 3),
                    "driver_commit_share": round((1.0 if pooled else 1.5) / w, 3),
                    "wall_vs_1_pool": round(w / walls[2], 2), "wall_vs_in_process_local": round(w / walls[0], 2),
                    "s3_requests": {"GET": 10, "PUT": 20, "total": 30} if "S3" in m or pooled else {"total": 0},
                    "cpu_s": 3.0, "pool_cpu_s": 9.0 if pooled else None, "moto_cpu_s": 2.0,
                    "driver_peak_mb": driver_mb, "worker_peak_mb": wp})
    return out


def test_the_cluster_block_has_a_row_per_mode_and_the_goals():
    rows = _rows("10k", 2048, (8.0, 24.0, 20.0, 12.5)) + _rows("100k", 20480, (80.0, 240.0, 200.0, 120.0), 460)
    text = render({"command": "python -m bench.performance.bench_cluster --sizes 10k,100k", "commit": "abc1234",
                   "date": "2026-12-04 04:00 UTC", "machine": {"nproc": 2, "uname": "Linux x"},
                   "results": rows})
    table = [ln for ln in text.splitlines() if ln.startswith("| 10k |")]
    assert len(table) == 4
    assert table[3] == "| 10k | 2,048 | 2 pools | 12.5 | 10.5 | 1.5 | 0.5 | 8% | 0.62 | 1.56 | 30 | 3.0 | 9.0 | 2.0 | 400 | 340 |"
    assert table[0].endswith("| 400 |  |")                     # no pools, no worker figure
    assert "share this machine's 2 cores" in text
    assert "2 pools / 1 pool wall 0.62 (goal <= 0.65: met)" in text
    assert "2 pools on S3 / in-process local 1.50 (goal <= 2.00: met)" in text   # the 100k row
    assert "on 2 pools +15% (goal <= +20%: met)" in text
    assert "S3 requests 0.001 (GET 10, PUT 20)" in text
    assert "abc1234" in text and RENDERERS["cluster"] == "bench.performance.bench_cluster"


def test_requests_are_counted_by_kind_since_the_mark(tmp_path):
    log = tmp_path / "moto.log"
    log.write_text('127.0.0.1 - - [05/Dec/2026 17:06:59] "PUT /b/old HTTP/1.1" 200 -\n')
    r = RequestLog(log)
    r.mark()
    with open(log, "a") as f:
        f.write('127.0.0.1 - - [x] "PUT /b/k HTTP/1.1" 200 -\n127.0.0.1 - - [x] "GET /b/k HTTP/1.1" 200 -\n'
                '127.0.0.1 - - [x] "GET /b?list-type=2&prefix=a HTTP/1.1" 200 -\n'
                '127.0.0.1 - - [x] "HEAD /b/k HTTP/1.1" 404 -\n')
    assert r.since_mark() == {"PUT": 1, "GET": 1, "LIST": 1, "HEAD": 1, "total": 4}


def test_profiles_are_summarized_by_function_package_and_project_frame(tmp_path):
    raw = tmp_path / "p.txt"
    site = "/venv/lib/python3.11/site-packages"
    raw.write_text(
        f'process 7:"python -m apache_beam.runners.worker.sdk_worker_main";run (x/a.py:1);'
        f"write (/repo/pipelines/stage.py:3);write_fragments ({site}/lance/fragment.py:9) 30\n"
        f'process 7:"python -m apache_beam.runners.worker.sdk_worker_main";run (x/a.py:1);'
        f"write (/repo/pipelines/stage.py:4) 10\n")
    from bench.performance import bench_cluster

    old = bench_cluster.REPO
    bench_cluster.REPO = type(old)("/repo")
    try:
        out = summarize([raw], rate=10)["sdk_worker_main"]
    finally:
        bench_cluster.REPO = old
    assert out["samples"] == 40 and out["seconds"] == 4.0
    assert out["self"][0] == {"name": "write_fragments (lance/fragment.py)", "samples": 30, "share": 0.75}
    assert out["package_self"][0]["name"] == "lance"
    assert out["innermost_project_function"][0] == {"name": "write (pipelines/stage.py)", "samples": 40,
                                                    "share": 1.0}


def test_a_subset_of_builds_is_named_by_tag_and_never_overwrites_the_full_report(tmp_path, capsys):
    import pytest

    from bench.performance import bench_cluster

    with pytest.raises(SystemExit):
        bench_cluster.main(["--modes", "bogus", "--out", str(tmp_path / "x.json"), "--work", str(tmp_path)])
    assert "in-process-S3" in capsys.readouterr().err
    with pytest.raises(SystemExit):       # the default --out holds the full report
        bench_cluster.main(["--modes", "in-process-S3", "--work", str(tmp_path)])
    assert "partial report" in capsys.readouterr().err
