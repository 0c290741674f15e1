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

Each row: wall time; the stage times ``vdgr index`` prints (``commit_s`` includes
``index_segments_s``, the index segments built by the pools' workers in a second, short job;
the driver's own part of the commit is the rest, and all of it on the in-process runner); the
commit's share of the wall; the wall against ``1 pool`` and against ``in-process, local``; the
S3 requests the build made (moto's request log, every client together); CPU seconds of the
driver (its rusage, children included), of the pools (every pool process and SDK worker) and of
moto; the driver's peak RSS (VmHWM) and the largest SDK worker's peak RSS (VmHWM of the pools'
processes, sampled). Every build must give the same build id as the local one. Under the table,
the issue-46 goals, each against its figure. On this machine the pools, the driver, the job
service and the S3 server share its cores (2 on the bench VM): what stops the speedup is in the
stage times and the CPU columns.

``--modes in-process-S3,...`` runs only the builds named (by tag: ``in-process-local``,
``in-process-S3``, ``1-pool``, ``2-pools``) into another ``--out``, without the ratios or a
BENCHMARKS.md block (they need every build): a quick before/after of one build.

``--profile`` runs only the ``2 pools`` build of each size, with ``py-spy record`` (the
``bench`` extra) on the driver and on the first pool (its SDK workers included), and writes a
top-N summary (self and total samples by function, by package, and by the innermost project
function) to ``bench/out/cluster_profile.json`` (``--profile-out``); the timed table is not
written, so the profiler's overhead stays out of it.

Results: ``bench/out/cluster.json`` and the ``cluster`` block of BENCHMARKS.md (command, date,
commit, machine); ``--no-markdown`` leaves BENCHMARKS.md alone.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from bench.common import REPO, fresh_dir
from bench.performance.bench_scale import descendants, grown_corpus, measured_run, proc_status_kb, stages_of, vdgr_argv
from bench.report.markdown import machine_line

# label -> (bench_scale's grown corpus it starts from, its first N manuals or all)
SIZES = {"2k": ("10k", 6), "10k": ("10k", None), "100k": ("100k", None)}
SCALE_WORK = REPO / "bench" / "work" / "scale"          # shared with bench_scale: grown once
BUCKET = "vdgr-bench"
OUT = REPO / "bench" / "out" / "cluster.json"
MODES = ("in-process, local", "in-process, S3", "1 pool", "2 pools")
# named, so that a build of many documents is not moved to SDK worker processes by the default
IN_PROCESS = ["--runner=FnApiRunner", "--direct_running_mode=in_memory"]
# the pools import this checkout's code (as the drivers do through bench_scale's PYTHONPATH), not
# whatever checkout the virtualenv's editable install names
POOL_ENV = {"PYTHONPATH": str(REPO)}


def _tag(mode: str) -> str:
    """A mode as a file-name and flag tag: ``"in-process, S3"`` -> ``"in-process-S3"``."""
    return mode.replace(", ", "-").replace(" ", "-")


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


def proc_cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) of ``pid`` itself and of its waited-for children
    (``/proc/<pid>/stat``); (0, 0) when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime) / tick, (cutime + cstime) / tick


class PoolPeaks:
    """Samples the peak RSS (VmHWM) of every process of some worker pools until stopped; on
    stop, their CPU seconds (each pool, its reaped children, its living descendants)."""

    def __init__(self, pids: list[int]) -> None:
        self.pids, self.peak_kb, self.cpu_s, self._done = pids, 0, 0.0, threading.Event()
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
        self.cpu_s = sum(sum(proc_cpu_s(p)) for pid in self.pids for p in [pid, *descendants(pid)])


_REQUEST = re.compile(r'"([A-Z]+) (\S+) HTTP/[0-9.]+" (\d{3})')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class RequestLog:
    """moto's request log: the S3 requests logged since :meth:`mark`, by kind."""

    def __init__(self, path: Path) -> None:
        self.path, self._at = path, 0

    def mark(self) -> None:
        self._at = self.path.stat().st_size if self.path.exists() else 0

    def since_mark(self) -> dict[str, int]:
        with open(self.path, "rb") as f:
            f.seek(self._at)
            text = _ANSI.sub("", f.read().decode("utf-8", "replace"))     # werkzeug may colour 4xx lines
        out: dict[str, int] = {}
        for method, target, _status in _REQUEST.findall(text):
            kind = "LIST" if method == "GET" and "list-type=" in target else method
            out[kind] = out.get(kind, 0) + 1
        out["total"] = sum(out.values())
        return out


def _kept_manifest(index: str, out: Path):
    """A build's manifest, read once and copied beside its log, so two builds whose ids differ
    can be compared table by table and domain by domain (``table_digests``, ``domain_digests``)."""
    from vdgr_core.store.manifest import read_manifest

    manifest = read_manifest(index)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(manifest.to_json())
    return manifest


def run_size(label: str, work: Path, s3, requests: RequestLog, modes=MODES, profile: Path | None = None) -> list[dict]:
    from tests.support.cluster import JobService, PoolFront, WorkerPool, external_flags

    corpus = corpus_of(work, label)
    client = s3.client()
    prefix = f"{label}/corpus"
    print(f"[bench_cluster] {label}: uploading {upload(client, corpus, prefix)} files", flush=True)
    rows = []
    hashing = ["--embedding", "hashing", "-q"]
    for mode in modes:
        tag = _tag(mode)
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
            WorkerPool(str(fresh_dir(work / "pools" / f"{tag}-{i}")), {**s3.env(), **POOL_ENV}).start()
            for i in range(int(mode.split()[0]))]
        spies: list = []
        moto0 = sum(proc_cpu_s(s3.pid))
        requests.mark()
        try:
            if pools:
                if profile is not None:
                    spies.append(WorkerSpies(pools[0].proc.pid, profile / f"{label}_pool").start())
                with PoolFront([p.address for p in pools]) as front, \
                        JobService(str(fresh_dir(work / "pools" / f"{tag}-jobs"))) as jobs, \
                        PoolPeaks([p.proc.pid for p in pools]) as peaks:
                    on_start = None if profile is None else (
                        lambda pid: spies.append(Spy(pid, profile / f"{label}_driver.txt").start(delay_s=1.0)))
                    r = measured_run([*cmd, *external_flags(front.address, len(pools), jobs.address)], log,
                                     on_start=on_start)
                    r["job_service_cpu_s"] = round(sum(proc_cpu_s(jobs.proc.pid)), 1)
                r["worker_peak_mb"] = round(peaks.peak_kb / 1024)
                r["pool_cpu_s"] = round(peaks.cpu_s, 1)
                r["workers_per_pool"] = {p.address: len(front.started[p.address]) for p in pools}
            else:
                r = measured_run(cmd, log)
                r["worker_peak_mb"] = None
        finally:
            for spy in spies:
                spy.stop()
            for p in pools:
                p.kill()
        r["moto_cpu_s"] = round(sum(proc_cpu_s(s3.pid)) - moto0, 1)
        r["s3_requests"] = requests.since_mark() if index.startswith("s3://") else {"total": 0}
        stages = stages_of(log)
        pooled = "pool" in mode     # the index segments ran on the pools' workers, not in the driver
        driver_commit = stages.get("commit_s", 0.0) - (stages.get("index_segments_s", 0.0) if pooled else 0.0)
        manifest = _kept_manifest(index, work / "logs" / f"{label}_{tag}.manifest.json")
        rows.append({"size": label, "mode": mode, **r, "stages_s": stages, "driver_commit_s": round(driver_commit, 1),
                     "commit_share": round(stages.get("commit_s", 0.0) / r["wall_s"], 3),
                     "driver_commit_share": round(driver_commit / r["wall_s"], 3),
                     "build_id": manifest.build_id, "chunks": int(manifest.counts.get("contents", 0))})
        if index.startswith("s3://"):      # moto keeps objects in memory: ~2 GB an index at 100k
            delete_prefix(client, f"{label}/index-{tag}/")
        print(json.dumps(rows[-1]), flush=True)
    if modes != MODES:
        return rows
    one = next(r["wall_s"] for r in rows if r["mode"] == "1 pool")
    in_s3 = next(r["wall_s"] for r in rows if r["mode"] == "in-process, S3")
    local = next(r["wall_s"] for r in rows if r["mode"] == "in-process, local")
    local_id = rows[0]["build_id"]
    for r in rows:
        r["speedup_vs_1_pool"] = round(one / r["wall_s"], 2)
        r["speedup_vs_in_process_s3"] = round(in_s3 / r["wall_s"], 2)
        r["wall_vs_1_pool"] = round(r["wall_s"] / one, 2)
        r["wall_vs_in_process_local"] = round(r["wall_s"] / local, 2)
        r["same_build_id"] = r["build_id"] == local_id
    if not all(r["same_build_id"] for r in rows):
        raise SystemExit(f"build ids differ: {[(r['mode'], r['build_id']) for r in rows]}")
    return rows


SPY_RATE = 50       # samples a second: two cores are shared by everything measured


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


class WorkerSpies:
    """A :class:`Spy` on each SDK worker of a pool, attached once the worker's boot has exec'd
    ``sdk_worker_main`` (py-spy's ``--subprocesses`` loses a process at ``exec``), each into
    ``<prefix>_<pid>.txt``."""

    def __init__(self, pool_pid: int, prefix: Path) -> None:
        self.pool_pid, self.prefix, self.spies = pool_pid, prefix, {}
        self._done = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.is_set():
            for pid in descendants(self.pool_pid):
                if pid not in self.spies and "sdk_worker_main" in _cmdline(pid):
                    self.spies[pid] = Spy(pid, self.prefix.with_name(f"{self.prefix.name}_{pid}.txt")).start()
            self._done.wait(0.1)

    def start(self) -> "WorkerSpies":
        self._t.start()
        return self

    def stop(self) -> None:
        self._done.set()
        self._t.join()
        for spy in self.spies.values():
            spy.stop()


class Spy:
    """``py-spy record --format raw`` on one process and its subprocesses, into ``out``."""

    def __init__(self, pid: int, out: Path, rate: int = SPY_RATE) -> None:
        self.pid, self.out, self.rate = pid, out, rate
        self.proc: subprocess.Popen | None = None
        self._t: threading.Thread | None = None

    def start(self, delay_s: float = 0.0) -> "Spy":
        def attach():
            time.sleep(delay_s)         # a process just started has no interpreter to find yet
            self.out.parent.mkdir(parents=True, exist_ok=True)
            self.proc = subprocess.Popen([shutil.which("py-spy") or "py-spy", "record", "--pid", str(self.pid),
                                          "--subprocesses", "--rate", str(self.rate), "--format", "raw",
                                          "-o", str(self.out)], stdout=subprocess.DEVNULL,
                                         stderr=open(self.out.with_suffix(".log"), "wb"))
        self._t = threading.Thread(target=attach, daemon=True)
        self._t.start()
        return self

    def stop(self) -> None:
        """Stop recording (SIGINT: py-spy writes what it has); it ends by itself with its process."""
        self._t.join()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


PROJECT = ("vdgr_core", "pipelines", "transforms", "runners", "schemas")


def _frame(frame: str) -> tuple[str, str]:
    """``func (path:line)`` -> (``func (module path)``, package): the path cut to the package
    (site-packages' or this repository's), the line dropped."""
    m = re.match(r"(.*) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame, "?"
    func, path = m.groups()
    if not path.startswith("/"):            # py-spy names a file relative to its sys.path entry
        return f"{func} ({path})", path.split("/", 1)[0].removesuffix(".py")
    for cut in ("site-packages/", "dist-packages/", str(REPO) + "/"):
        if cut in path:
            rel = path.split(cut, 1)[1]
            return f"{func} ({rel})", rel.split("/", 1)[0].removesuffix(".py")
    if "/lib/python3" in path:
        rel = path.split("/lib/python3", 1)[1].split("/", 1)[-1]
        return f"{func} ({rel})", "stdlib:" + rel.split("/", 1)[0].removesuffix(".py")
    return f"{func} ({path})", path


def summarize(raws: Sequence[Path], rate: int, top: int = 15) -> dict:
    """Top ``top`` of py-spy's raw (collapsed) stacks in the files ``raws``: self and total
    samples by function, self by package, and total by the innermost function of this project
    (the time spent in it and in the libraries it calls), per kind of process (the command's
    module)."""
    from collections import Counter

    kinds: dict[str, dict[str, Counter]] = {}
    lines = [ln for raw in raws for ln in raw.read_text(encoding="utf-8", errors="replace").splitlines()]
    for line in lines:
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        frames = stack.split(";")
        kind, cmd = "main", None
        while frames and frames[0].startswith("process "):       # --subprocesses: the chain of processes
            cmd = frames.pop(0)
        if cmd is not None:
            kind = next((k for k in ("sdk_worker_main", "worker_boot", "worker_pool_main", "runners.cli", "vdgr")
                         if k in cmd), "other")
        parsed = [_frame(f) for f in frames]
        if not parsed:
            continue
        c = kinds.setdefault(kind, {k: Counter() for k in ("samples", "self", "total", "package", "project")})
        c["samples"]["all"] += int(n)
        c["self"][parsed[-1][0]] += int(n)
        c["package"][parsed[-1][1]] += int(n)
        for name in {f for f, _ in parsed}:
            c["total"][name] += int(n)
        mine = [f for f, pkg in parsed if pkg in PROJECT]
        c["project"][mine[-1] if mine else "(no project frame)"] += int(n)
    out = {}
    for kind, c in kinds.items():
        total = c["samples"]["all"]
        pick = lambda counter: [{"name": k, "samples": v, "share": round(v / total, 3)}  # noqa: E731
                                for k, v in counter.most_common(top)]
        out[kind] = {"samples": total, "seconds": round(total / rate, 1), "self": pick(c["self"]),
                     "total": pick(c["total"]), "package_self": pick(c["package"]),
                     "innermost_project_function": pick(c["project"])}
    return out


def _goal(value, limit, fmt="{:.2f}") -> str:
    if value is None:
        return "not measured"
    return f"{fmt.format(value)} (goal <= {fmt.format(limit)}: {'met' if value <= limit else 'not met'})"


def goals(results: list[dict]) -> list[str]:
    """The issue-46 goals, each against this run's figure."""
    lines = []
    by = {(r["size"], r["mode"]): r for r in results}
    for size in dict.fromkeys(r["size"] for r in results):
        one, two, local = by.get((size, "1 pool")), by.get((size, "2 pools")), by.get((size, "in-process, local"))
        if not (one and two and local):
            continue
        s3_rows = [by[(size, m)] for m in MODES if "S3" in m or "pool" in m if (size, m) in by]
        lines.append(f"- {size}: 2 pools / 1 pool wall {_goal(two['wall_s'] / one['wall_s'], 0.65)}; "
                     f"2 pools on S3 / in-process local {_goal(two['wall_s'] / local['wall_s'], 2.0)}; "
                     "commit / wall on S3 (in-process, 1 pool, 2 pools) "
                     + ", ".join(f"{r.get('commit_share', 0):.0%}" for r in s3_rows)
                     + f", the driver's own part of it on 2 pools {_goal(two.get('driver_commit_share'), 0.10, '{:.0%}')}")
    sizes = list(dict.fromkeys(r["size"] for r in results))
    if "10k" in sizes and "100k" in sizes:
        growth = []
        for mode in MODES:
            a, b = by.get(("10k", mode)), by.get(("100k", mode))
            if a and b:
                growth.append(f"{mode} {a['driver_peak_mb']:,d} -> {b['driver_peak_mb']:,d} MB "
                              f"({b['driver_peak_mb'] / a['driver_peak_mb'] - 1:+.0%})")
        a, b = by.get(("10k", "2 pools")), by.get(("100k", "2 pools"))
        lines.append("- driver peak RSS 10k -> 100k: " + "; ".join(growth)
                     + (f"; on 2 pools {_goal(b['driver_peak_mb'] / a['driver_peak_mb'] - 1, 0.20, '{:+.0%}')}"
                        if a and b else ""))
    for r in results:
        if r["mode"] == "2 pools" and r.get("chunks"):
            k = r["chunks"]
            lines.append(f"- per chunk, {r['size']} on 2 pools: driver CPU {1e3 * r.get('cpu_s', 0) / k:.2f} ms, "
                         f"pool CPU {1e3 * r.get('pool_cpu_s', 0) / k:.2f} ms, moto CPU "
                         f"{1e3 * r.get('moto_cpu_s', 0) / k:.2f} ms, S3 requests "
                         f"{r.get('s3_requests', {}).get('total', 0) / k:.3f} "
                         f"({', '.join(f'{m} {n:,d}' for m, n in sorted(r.get('s3_requests', {}).items()) if m != 'total')})")
    return lines


def render(report: dict) -> str:
    """The ``cluster`` block of BENCHMARKS.md."""
    lines = ["### cluster (worker pools and a local S3, hashing embedder)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(report["machine"]),
             "- a grown EManual corpus (bench/prepare/grow_corpus.py) built by `vdgr index` on Beam worker pools "
             "(`--environment_type=EXTERNAL`, one SDK worker per pool, from a separate job service) reading and "
             "writing moto's S3 server on this machine, against the in-process FnApiRunner; the pools, the driver, "
             f"the job service and moto share this machine's {report['machine'].get('nproc', '?')} cores; "
             "commit s includes the index segments (built on the pools' workers in pool rows, in the driver "
             "otherwise); driver's commit: the rest; S3 requests: moto's request log, all clients; CPU: user + "
             "system seconds; driver peak: the `vdgr index` process's VmHWM; worker peak: the largest VmHWM "
             "among the pools' processes; every row's build id equals the local build's", "",
             "| size | chunks | mode | wall s | pipeline s | commit s | of it, index segments s | driver's commit "
             "/ wall | wall / 1 pool | wall / in-process local | S3 requests | driver CPU s | pool CPU s | moto CPU s "
             "| driver peak MB | worker peak MB |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in report["results"]:
        st = r.get("stages_s", {})
        opt = lambda v: "" if v is None else str(v)  # noqa: E731
        share = r.get("driver_commit_share")
        requests = r.get("s3_requests", {}).get("total")
        lines.append(f"| {r['size']} | {r['chunks']:,d} | {r['mode']} | {r['wall_s']} | {st.get('pipeline_s', '')} "
                     f"| {st.get('commit_s', '')} | {opt(st.get('index_segments_s'))} "
                     f"| {'' if share is None else f'{share:.0%}'} | {opt(r.get('wall_vs_1_pool'))} "
                     f"| {opt(r.get('wall_vs_in_process_local'))} | {'' if not requests else f'{requests:,d}'} "
                     f"| {opt(r.get('cpu_s'))} | {opt(r.get('pool_cpu_s'))} | {opt(r.get('moto_cpu_s'))} "
                     f"| {r['driver_peak_mb']} | {opt(r.get('worker_peak_mb'))} |")
    g = goals(report["results"])
    if g:
        lines += ["", "Issue 46's goals in this run:", "", *g]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100k", help="comma list of " + ", ".join(SIZES))
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work" / "cluster")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--no-markdown", action="store_true", help="do not merge the table into BENCHMARKS.md")
    ap.add_argument("--modes", help="comma list of the builds to run, by tag: " + ", ".join(_tag(m) for m in MODES)
                    + " (default: all; a subset writes --out only, no BENCHMARKS.md block: the block's ratios need all)")
    ap.add_argument("--profile", action="store_true",
                    help="only the 2-pool build, under py-spy (driver and first pool); writes --profile-out")
    ap.add_argument("--profile-out", type=Path, default=REPO / "bench" / "out" / "cluster_profile.json")
    a = ap.parse_args(argv)
    sizes = [s for s in a.sizes.split(",") if s]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        ap.error(f"unknown sizes {unknown}; choose from {list(SIZES)}")
    if a.profile and shutil.which("py-spy") is None:
        ap.error("--profile needs py-spy (pip install -e '.[bench]')")
    modes = MODES
    if a.modes:
        by_tag = {_tag(m): m for m in MODES}
        bad = [t for t in a.modes.split(",") if t not in by_tag]
        if bad:
            ap.error(f"unknown modes {bad}; choose from {list(by_tag)}")
        modes = tuple(m for m in MODES if _tag(m) in a.modes.split(","))
        if modes != MODES and a.out == OUT:
            ap.error("--modes makes a partial report: name another --out (bench/out/cluster.json holds the full one)")
    a.work.mkdir(parents=True, exist_ok=True)
    from bench.report.provenance import stamp
    from bench.report.update_benchmarks_md import publish
    from tests.support.cluster import S3Endpoint

    command = "python -m bench.performance.bench_cluster " + " ".join(argv if argv is not None else sys.argv[1:])
    results: list[dict] = []
    request_log = a.work / "s3_requests.log"
    request_log.unlink(missing_ok=True)
    profile_dir = fresh_dir(a.work / "profile") if a.profile else None
    with S3Endpoint(str(request_log)) as s3:
        s3.client().create_bucket(Bucket=BUCKET)
        saved = {k: os.environ.get(k) for k in s3.env()}
        os.environ.update(s3.env())        # the driver processes and this one find S3 the standard way
        try:
            for label in sizes:
                results += run_size(label, a.work, s3, RequestLog(request_log),
                                    modes=("2 pools",) if a.profile else modes, profile=profile_dir)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    if a.profile:
        profiles = {}
        for r in results:
            for who in ("driver", "pool"):
                raws = sorted(profile_dir.glob(f"{r['size']}_{who}*.txt"))
                if raws:
                    profiles[f"{r['size']} {who}"] = summarize(raws, SPY_RATE)
        report = {**stamp(command), "results": results, "profiles": profiles}
        a.profile_out.parent.mkdir(parents=True, exist_ok=True)
        a.profile_out.write_text(json.dumps(report, indent=1) + "\n")
        print(json.dumps(profiles, indent=1)[:6000])
        return 0
    report = {**stamp(command), "results": results}
    full = modes == MODES
    publish(report, a.out, "cluster", render(report) if full else "", markdown=not a.no_markdown and full)
    return 0


if __name__ == "__main__":
    sys.exit(main())
