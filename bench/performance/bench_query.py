"""Query latency benchmark: p50/p95 of ``trace.timings_ms.total`` over the E-Manual questions.

``python -m bench.performance.bench_query [--index bench/work/emanual_all/index] [--repeat 1] [--profile FILE]``

Opens the index once (models loaded, offline), then answers the 50 S10 questions in the three
all-manuals settings (``scoped``: domain given, ``named``: product named in the question,
``unscoped``) with three configurations side by side, interleaved question by question so that
noise from a shared machine hits both alike:

- ``route 1``: hybrid (BM25 + dense, the default fusion) with routing, no TOC/graph, no backtracking/reflection;
- ``default``: the default QueryConfig (schemas/config.py);
- ``all routes``: every component on (hybrid + TOC + graph, backtracking, reflection, routing).

Every configuration first answers a few warm-up questions (first-use caches: per-domain graphs,
ACL masks, the embedding model's first call). The JSON report goes to
``bench/out/latency.json``; ``python -m bench.report.update_benchmarks_md`` merges it into
BENCHMARKS.md. ``--profile FILE`` writes a cProfile dump of the measured queries.
The questions (and the index, when missing) come from ``python -m bench.quality.run_eval emanual_all``.
"""
from __future__ import annotations

import argparse
import cProfile
import datetime
import json
import shlex
import sys
from pathlib import Path

from bench.common import REPO, read_jsonl
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine
from schemas.config import EmbeddingConfig, QueryConfig
from vdgr_core.eval import latency_summary

SETTINGS = ("scoped", "named", "unscoped")
CONFIGS = {
    "route 1": dict(routes=("hybrid",), backtrack=False, reflection=False, routing=True),
    "default": dict(),
    "all routes": dict(routes=("hybrid", "toc", "graph"), backtrack=True, reflection=True, routing=True),
}
WARMUP = 5


def _items(work: Path) -> dict[str, list[dict]]:
    out = {}
    for s in SETTINGS:
        rows = read_jsonl(work / f"questions_{s}.jsonl")
        out[s] = [{k: q[k] for k in ("id", "question", "domain") if k in q} for q in rows]
    return out


def measure(index: Path, work: Path, repeat: int = 1, profile: str | None = None) -> dict:
    """Run the benchmark; return ``{config: {"all": summary, setting: summary}}``."""
    from vdgr_core.query.knowledge_base import KnowledgeBase
    from vdgr_core.store.manifest import read_manifest

    m = read_manifest(str(index))
    emb = EmbeddingConfig.for_index(m.embedding_model, m.dim)
    items = _items(work)
    kbs = {}
    base = None
    for name, flags in CONFIGS.items():
        cfg = QueryConfig(embedding=emb, **flags)
        if base is None:
            base = KnowledgeBase.open(str(index), cfg)
            kbs[name] = base
        else:   # same reader, view, vector search and embedder: only the configuration differs
            kbs[name] = KnowledgeBase(base.reader, base.data, cfg, base.embedder, vectors=base.vectors)
    for kb in kbs.values():
        for q in items["named"][:WARMUP]:
            kb.query(q["question"], domain=q.get("domain"))
    lat: dict[str, dict[str, list[float]]] = {n: {s: [] for s in SETTINGS} for n in kbs}
    prof = cProfile.Profile() if profile else None
    for _ in range(repeat):
        for s in SETTINGS:
            for q in items[s]:
                for name, kb in kbs.items():      # interleaved: both see the same machine noise
                    if prof:
                        prof.enable()
                    r = kb.query(q["question"], domain=q.get("domain"), qid=q["id"])
                    if prof:
                        prof.disable()
                    lat[name][s].append(r.trace.timings_ms["total"])
    if prof:
        prof.dump_stats(profile)
    return {name: {"all": latency_summary([v for s in SETTINGS for v in per[s]]),
                   **{s: latency_summary(per[s]) for s in SETTINGS}} for name, per in lat.items()}


def render(report: dict) -> str:
    """Markdown block of the latency report."""
    m = report["machine"]
    lines = ["### latency", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(m) + " (shared; configurations interleaved)",
             f"- index: `{report['index']}`; {report['questions']} questions x {len(SETTINGS)} settings"
             f" x {report['repeat']} repeat(s); `trace.timings_ms.total`, models loaded, offline", "",
             "| configuration | setting | n | p50 ms | p95 ms | mean ms |", "|---|---|---|---|---|---|"]
    for name, per in report["results"].items():
        for s in ("all", *SETTINGS):
            v = per[s]
            lines.append(f"| {name} | {s} | {v['n']} | {v['p50_ms']} | {v['p95_ms']} | {v['mean_ms']} |")
    lines.append("")
    shown = {n: QueryConfig(**f) for n, f in CONFIGS.items()}
    lines.append("Configurations: " + "; ".join(
        f"`{n}` = routes {'+'.join(c.routes)}, backtrack {c.backtrack}, reflection "
        f"{c.reflection}, routing {c.routing}" for n, c in shown.items()))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work" / "emanual_all",
                    help="emanual_all work folder (questions_<setting>.jsonl)")
    ap.add_argument("--index", type=Path, default=None, help="index (default: WORK/index)")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", default=None, help="write a cProfile dump here")
    a = ap.parse_args(argv)
    index = a.index or a.work / "index"
    if not (index / "manifest.json").exists() or not (a.work / "questions_named.jsonl").exists():
        print("[bench] no emanual_all index/questions: run `python -m bench.quality.run_eval emanual_all` first",
              file=sys.stderr)
        return 1
    results = measure(index, a.work, a.repeat, a.profile)
    report = {"dataset": "latency",
              "command": "python -m bench.performance.bench_query " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:])),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "index": str(index), "repeat": a.repeat,
              "questions": len(read_jsonl(a.work / "questions_named.jsonl")), "results": results,
              "kind": "latency"}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "latency.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
