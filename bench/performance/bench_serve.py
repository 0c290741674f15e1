"""HTTP service benchmark: requests/s and p50/p95 of ``POST /v1/query`` through ``vdgr serve``.

``python -m bench.performance.bench_serve [--work bench/work] [--embedding minilm|hashing] [--requests 160]``

Indexes ``examples/corpus`` once (``<work>/serve/index``), starts ``vdgr serve`` as its own
process on 127.0.0.1 (a free port) with one API key, and sends the ten questions of
``examples/questions.jsonl`` (with their domain/version) round-robin from 1 client and from
16 concurrent clients, alternating rounds of the two so that the shared machine's noise hits
both alike. Latency is the client's wall time per request (connection included); requests/s is
requests / wall time of the round. The report goes to ``bench/out/serve.json`` and is merged
into BENCHMARKS.md (block ``serve``).
"""
from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import shlex
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import REPO, read_jsonl, vdgr_command
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine
from vdgr_core.eval import latency_summary

KEY = "bench-key-0123456789abcdef"
CONCURRENCY = (1, 16)


def build_examples_index(work: Path, embedding: str) -> Path:
    """``examples/corpus`` indexed under ``work`` (reused while the corpus is unchanged)."""
    from bench.common import tree_hash

    index = work / "index"
    stamp = work / "index.stamp.json"
    want = {"corpus": tree_hash(REPO / "examples" / "corpus"), "embedding": embedding}
    if not (index / "manifest.json").exists() or not stamp.exists() or json.loads(stamp.read_text()) != want:
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run([vdgr_command(), "index", str(REPO / "examples" / "corpus"), "--index", str(index),
                        "--embedding", embedding, "-q"], cwd=REPO, check=True,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
        stamp.write_text(json.dumps(want))
    return index


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeProcess:
    """``vdgr serve`` in a child process; ``with`` waits for /healthz and stops it after."""

    def __init__(self, index: Path, work: Path, extra: list[str] = (), keys: dict | None = None):
        self.port = free_port()
        keys_file = work / "keys.yaml"
        keys_file.write_text(json.dumps(keys or {"keys": [{"key": KEY, "name": "bench", "groups": ["staff"]}]}))
        self.cmd = [vdgr_command(), "serve", "--index", str(index), "--port", str(self.port),
                    "--api-keys", str(keys_file), "--rate-limit", "100000/minute",
                    "--workers-log-level", "warning", *extra]
        self.log = open(work / "serve.log", "w")

    def __enter__(self) -> "ServeProcess":
        self.proc = subprocess.Popen(self.cmd, cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "HF_HUB_OFFLINE": "1"})
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"vdgr serve exited ({self.proc.returncode}); see {self.log.name}")
            try:
                if request(self.port, "GET", "/healthz")[0] == 200:
                    return self
            except OSError:
                time.sleep(0.2)
        raise SystemExit("vdgr serve did not become healthy")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def request(port: int, method: str, path: str, body=None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        r = conn.getresponse()
        return r.status, json.loads(r.read() or b"{}")
    finally:
        conn.close()


def run_round(port: int, items: list[dict], clients: int, n: int) -> dict:
    """``n`` requests from ``clients`` threads; latencies, errors, wall time."""
    def one(i: int) -> tuple[float, int]:
        t0 = time.perf_counter()
        status, _ = request(port, "POST", "/v1/query", items[i % len(items)])
        return (time.perf_counter() - t0) * 1000.0, status

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        out = list(pool.map(one, range(n)))
    wall = time.perf_counter() - t0
    return {"lat": [ms for ms, _ in out], "errors": sum(1 for _, s in out if s != 200), "wall": wall, "n": n}


def measure(port: int, items: list[dict], requests: int, rounds: int) -> dict:
    for q in items:                                     # warm-up: first-use caches
        request(port, "POST", "/v1/query", q)
    acc = {c: {"lat": [], "errors": 0, "wall": 0.0, "n": 0} for c in CONCURRENCY}
    for _ in range(rounds):
        for c in CONCURRENCY:                           # alternated: same machine noise
            r = run_round(port, items, c, requests // rounds if c > 1 else max(10, requests // (4 * rounds)))
            a = acc[c]
            a["lat"] += r["lat"]
            a["errors"] += r["errors"]
            a["wall"] += r["wall"]
            a["n"] += r["n"]
    return {str(c): {"requests": a["n"], "errors": a["errors"], "rps": round(a["n"] / a["wall"], 2),
                     **latency_summary(a["lat"])} for c, a in acc.items()}


def render(report: dict) -> str:
    m = report["machine"]
    lines = ["### serve (HTTP service)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(m) + " (shared; client and server on the same machine)",
             f"- index: examples/corpus ({report['embedding']} embeddings); `POST /v1/query` with the "
             f"{report['questions']} questions of examples/questions.jsonl, default configuration, no LLM; "
             "latency = client wall time per request", "",
             "| clients | requests | errors | requests/s | p50 ms | p95 ms | mean ms |", "|---|---|---|---|---|---|---|"]
    for c, v in report["results"].items():
        lines.append(f"| {c} | {v['requests']} | {v['errors']} | {v['rps']} | {v['p50_ms']} | {v['p95_ms']} | "
                     f"{v['mean_ms']} |")
    r = report["results"]
    lines += ["", f"16 clients / 1 client throughput: {r['16']['rps'] / r['1']['rps']:.2f} (queries run one at a "
              "time per index snapshot; concurrency overlaps HTTP and JSON work with them)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--embedding", default="minilm", choices=["minilm", "hashing"])
    ap.add_argument("--requests", type=int, default=320, help="requests of the 16-client runs, in all")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    a = ap.parse_args(argv)
    work = a.work / "serve"
    index = build_examples_index(work, a.embedding)
    items = [{k: q[k] for k in ("question", "domain", "version") if k in q}
             for q in read_jsonl(REPO / "examples" / "questions.jsonl")]
    with ServeProcess(index, work) as server:
        results = measure(server.port, items, a.requests, a.rounds)
    report = {"dataset": "serve", "kind": "serve",
              "command": "python -m bench.performance.bench_serve " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:])),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "embedding": a.embedding, "questions": len(items),
              "results": results}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "serve.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    from bench.report.update_benchmarks_md import update
    update(REPO / "BENCHMARKS.md", a.out, ["serve"])
    print(render(report))
    return 1 if any(v["errors"] for v in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
