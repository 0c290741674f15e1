"""Scale-out benchmark: a grown corpus built on 1 and on 2 Beam worker pools through a local S3,
against the in-process FnApiRunner, in one run.

One command::

    python -m bench.performance.bench_cluster [--sizes 100k] [--work bench/work/cluster]

For each size the EManual corpus is grown as bench/performance/bench_scale.py grows it
(``bench/prepare/grow_corpus.py``; ``2k`` is the first 6 manuals of one version, for a quick check) and
uploaded to moto's S3 server on 127.0.0.1. Then, each build a fresh ``vdgr index`` process with
the hashing embedder:

- ``in-process, local``: the corpus folder into a local index (FnApiRunner in this process,
  named by ``--runner=FnApiRunner --direct_running_mode=in_memory`` so that a corpus of many
  documents is not moved to SDK worker processes by ``vdgr index``'s own choice);
- ``in-process, S3``: the S3 corpus into an S3 index, same runner (the object store's own cost);
- ``1 pool`` and ``2 pools``: the S3 corpus into an S3 index through ``--runner=PortableRunner
  --job_endpoint=<job service> --environment_type=EXTERNAL`` on worker pools started for that
  build (each its own process group, cwd, HOME and TMPDIR; tests/support/cluster.py) and a job
  service in its own process (tests/support/job_service.py), one SDK worker per pool
  (``--direct_num_workers``).

Each S3 index is deleted from the bucket once measured (moto holds objects in memory).

Each row: wall time, the stage times ``vdgr index`` prints, speedup against ``1 pool`` and
against ``in-process, S3``, the driver's peak RSS (VmHWM) and the largest SDK worker's peak RSS
(VmHWM of the pools' processes, sampled). Every build must give the same build id as the local
one. On this machine the pools, the driver and the S3 server share its cores: what stops the
speedup is in the stage times (the driver's commit is serial, the job service and S3 are in the
driver's and moto's processes).

Results: ``bench/out/cluster.json`` and the ``cluster`` block of BENCHMARKS.md (command, date,
commit, machine); ``--no-markdown`` leaves BENCHMARKS.md alone.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import REPO, fresh_dir
from bench.performance.bench_scale import descendants, grown_corpus, measured_run, proc_status_kb, stages_of, vdgr_argv
from bench.report.markdown import machine_line

# label -> (bench_scale's grown corpus it starts from, its first N manuals or all)
SIZES = {"2k": ("10k", 6), "10k": ("10k", None), "100k": ("100k", None)}
SCALE_WORK = REPO / "bench" / "work" / "scale"          # shared with bench_scale: grown once
BUCKET = "vdgr-bench"
MODES = ("in-process, local", "in-process, S3", "1 pool", "2 pools")
# named, so that a build of many documents is not moved to SDK worker processes by the default
IN_PROCESS = ["--runner=FnApiRunner", "--direct_running_mode=in_memory"]


def corpus_of(work: Path, label: str) -> Path:
    """The grown corpus of ``label``: bench_scale's growth, cut to its first N manuals."""
    from bench.performance.bench_scale import SIZES as SCALE_SIZES

    base, manuals = SIZES[label]
    grown = grown_corpus(SCALE_WORK, base, SCALE_SIZES[base])
    if manuals is None:
        return grown
    cut = work / f"corpus_{label}"
    if not cut.is_dir():
        fresh_dir(cut)
        for d in sorted(p for p in grown.iterdir() if p.is_dir())[:manuals]:
            shutil.copytree(d, cut / d.name)
    return cut


def delete_prefix(client, prefix: str) -> int:
    """Delete every object under ``prefix`` in the bench bucket; the number deleted."""
    n = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=BUCKET, Delete={"Objects": keys, "Quiet": True})
            n += len(keys)
    return n


def upload(client, corpus: Path, prefix: str) -> int:
    files = [p for p in corpus.rglob("*") if p.is_file()]
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda p: client.upload_file(str(p), BUCKET, f"{prefix}/{p.relative_to(corpus)}"), files))
    return len(files)


class PoolPeaks:
    """Samples the peak RSS (VmHWM) of every process of some worker pools until stopped."""

    def __init__(self, pids: list[int]) -> None:
        self.pids, self.peak_kb, self._done = pids, 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.is_set():
            for pid in self.pids:
                for p in [pid, *descendants(pid)]:
                    self.peak_kb = max(self.peak_kb, proc_status_kb(p, "VmHWM"))
            self._done.wait(0.2)

    def __enter__(self) -> "PoolPeaks":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._t.join()


def _build_id(index: str) -> str:
    from vdgr_core.store.manifest import read_manifest

    return read_manifest(index).build_id


def _chunks(index: str) -> int:
    from vdgr_core.store.manifest import read_manifest

    return int(read_manifest(index).counts.get("contents", 0))


def run_size(label: str, work: Path, s3) -> list[dict]:
    from tests.support.cluster import JobService, PoolFront, WorkerPool, external_flags

    corpus = corpus_of(work, label)
    client = s3.client()
    prefix = f"{label}/corpus"
    print(f"[bench_cluster] {label}: uploading {upload(client, corpus, prefix)} files", flush=True)
    rows = []
    hashing = ["--embedding", "hashing", "-q"]
    for mode in MODES:
        tag = mode.replace(", ", "-").replace(" ", "-")
        log = work / "logs" / f"{label}_{tag}.log"
        if mode == "in-process, local":
            index = str(fresh_dir(work / f"index_{label}"))
            cmd = [*vdgr_argv(), "index", str(corpus), "--index", index, *hashing, *IN_PROCESS]
        else:
            index = f"s3://{BUCKET}/{label}/index-{tag}"
            cmd = [*vdgr_argv(), "index", f"s3://{BUCKET}/{prefix}", "--index", index, *hashing]
            if "pool" not in mode:
                cmd += IN_PROCESS
        print(f"[bench_cluster] {label}: {mode} ...", flush=True)
        pools = [] if "pool" not in mode else [
            WorkerPool(str(fresh_dir(work / "pools" / f"{tag}-{i}")), s3.env()).start()
            for i in range(int(mode.split()[0]))]
        try:
            if pools:
                with PoolFront([p.address for p in pools]) as front, \
                        JobService(str(fresh_dir(work / "pools" / f"{tag}-jobs"))) as jobs, \
                        PoolPeaks([p.proc.pid for p in pools]) as peaks:
                    r = measured_run([*cmd, *external_flags(front.address, len(pools), jobs.address)], log)
                    r["worker_peak_mb"] = round(peaks.peak_kb / 1024)
                    r["workers_per_pool"] = {p.address: len(front.started[p.address]) for p in pools}
            else:
                r = measured_run(cmd, log)
                r["worker_peak_mb"] = None
        finally:
            for p in pools:
                p.kill()
        rows.append({"size": label, "mode": mode, **r, "stages_s": stages_of(log), "build_id": _build_id(index),
                     "chunks": _chunks(index)})
        if index.startswith("s3://"):      # moto keeps objects in memory: ~2 GB an index at 100k
            delete_prefix(client, f"{label}/index-{tag}/")
        print(json.dumps(rows[-1]), flush=True)
    one = next(r["wall_s"] for r in rows if r["mode"] == "1 pool")
    in_s3 = next(r["wall_s"] for r in rows if r["mode"] == "in-process, S3")
    local_id = rows[0]["build_id"]
    for r in rows:
        r["speedup_vs_1_pool"] = round(one / r["wall_s"], 2)
        r["speedup_vs_in_process_s3"] = round(in_s3 / r["wall_s"], 2)
        r["same_build_id"] = r["build_id"] == local_id
    if not all(r["same_build_id"] for r in rows):
        raise SystemExit(f"build ids differ: {[(r['mode'], r['build_id']) for r in rows]}")
    return rows


def render(report: dict) -> str:
    """The ``cluster`` block of BENCHMARKS.md."""
    lines = ["### cluster (worker pools and a local S3, hashing embedder)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(report["machine"]),
             "- a grown EManual corpus (bench/prepare/grow_corpus.py) built by `vdgr index` on Beam worker pools "
             "(`--environment_type=EXTERNAL`, one SDK worker per pool, from a separate job service) reading and writing moto's S3 server on this machine, against the in-process "
             "FnApiRunner; driver peak: the `vdgr index` process's VmHWM; worker peak: the largest VmHWM among "
             "the pools' processes; every row's build id equals the local build's", "",
             "| size | chunks | mode | wall s | pipeline s | commit s | speedup vs 1 pool | vs in-process S3 "
             "| driver peak MB | worker peak MB |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["results"]:
        st = r.get("stages_s", {})
        worker = "" if r.get("worker_peak_mb") is None else str(r["worker_peak_mb"])
        lines.append(f"| {r['size']} | {r['chunks']:,d} | {r['mode']} | {r['wall_s']} | {st.get('pipeline_s', '')} "
                     f"| {st.get('commit_s', '')} | {r['speedup_vs_1_pool']} | {r['speedup_vs_in_process_s3']} "
                     f"| {r['driver_peak_mb']} | {worker} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100k", help="comma list of " + ", ".join(SIZES))
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work" / "cluster")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "cluster.json")
    ap.add_argument("--no-markdown", action="store_true", help="do not merge the table into BENCHMARKS.md")
    a = ap.parse_args(argv)
    sizes = [s for s in a.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        ap.error(f"unknown sizes {unknown}; choose from {list(SIZES)}")
    a.work.mkdir(parents=True, exist_ok=True)
    from bench.report.provenance import stamp
    from bench.report.update_benchmarks_md import publish
    from tests.support.cluster import S3Endpoint

    command = "python -m bench.performance.bench_cluster " + " ".join(argv if argv is not None else sys.argv[1:])
    results: list[dict] = []
    with S3Endpoint() as s3:
        s3.client().create_bucket(Bucket=BUCKET)
        saved = {k: os.environ.get(k) for k in s3.env()}
        os.environ.update(s3.env())        # the driver processes and this one find S3 the standard way
        try:
            for label in sizes:
                results += run_size(label, a.work, s3)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    report = {**stamp(command), "results": results}
    publish(report, a.out, "cluster", render(report), markdown=not a.no_markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
