"""Run one benchmark end to end with the real CLI and write bench/out/<dataset>.{json,md}.

``python -m bench.quality.run_eval emanual|emanual_all|musique|dcd [--work bench/work] [--quick]``

Steps: convert the shared data into ``<work>/<dataset>/corpus`` and question files;
``vdgr index`` it (reused when corpus and index arguments are unchanged); for every
setting and every configuration of the ablation list, ``vdgr query --questions`` in batch
mode; score each result with :mod:`vdgr_core.eval`; write the aggregate JSON and a
Markdown table (merge it into BENCHMARKS.md with ``python -m bench.report.update_benchmarks_md``).
Per-question results and scores stay in ``<work>/<dataset>/runs/``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
from pathlib import Path

from bench.common import REPO, read_jsonl, slug, write_jsonl
from bench.prepare.datasets import CONFIGS, DATASETS, QUICK_CONFIGS, Dataset
from bench.report.markdown import render
from bench.report.provenance import commit, machine
from bench.vdgr_cli import ensure_index, run, supported
from vdgr_core.eval import aggregate, score_result

QUERY_KEYS = ("id", "question", "domain", "version", "groups")


def query_rows(questions: list[dict]) -> list[dict]:
    """What the CLI reads: id, question and the optional scope fields (no gold)."""
    return [{k: q[k] for k in QUERY_KEYS if k in q} for q in questions]


def score_file(questions: list[dict], results_path: Path, ks) -> tuple[dict, list[dict]]:
    """Score a results JSONL against the questions' gold; return (aggregate, per question)."""
    by_id = {r.get("id"): r for r in read_jsonl(results_path)} if results_path.exists() else {}
    scores = [dict(score_result(by_id.get(q["id"]), q["gold"], ks), id=q["id"]) for q in questions]
    agg = aggregate([{k: v for k, v in s.items() if k != "id"} for s in scores])
    return agg, scores


def evaluate(ds: Dataset, work: Path, configs, limit: int | None, k: int, index_args: list[str],
             log=print) -> dict:
    """Convert, index, query every (setting, config) and score. Returns the report dict."""
    base = work / ds.name
    log(f"[bench] converting {ds.name} -> {base}")
    stats = ds.convert(base)
    index = ensure_index(base / "corpus", base / "index", index_args, base / "logs" / "index.log")
    log(f"[bench] index {'reused' if index['reused'] else 'built in %ss' % index['build_s']}")
    results: dict = {}
    dropped: dict = {}
    n_questions: dict = {}
    for setting in ds.settings:
        questions = read_jsonl(base / f"questions_{setting}.jsonl")[:limit]
        n_questions[setting] = len(questions)
        qfile = base / "runs" / setting / "queries.jsonl"
        write_jsonl(qfile, query_rows(questions))
        results[setting] = {}
        for name, flags in configs:
            flags, dropped[name] = supported(flags)
            out = base / "runs" / setting / f"{slug(name)}.jsonl"
            out.unlink(missing_ok=True)
            rc, secs = run(["query", "--index", str(base / "index"), "--questions", str(qfile),
                            "--out", str(out), "--k", str(k), *flags],
                           base / "logs" / f"{setting}-{slug(name)}.log")
            if rc != 0:
                results[setting][name] = {"error": f"vdgr query exited {rc}", "log": f"logs/{setting}-{slug(name)}.log"}
                log(f"[bench] {setting} / {name}: FAILED (rc={rc})")
                continue
            agg, scores = score_file(questions, out, ds.ks)
            agg["wall_s"] = round(secs, 1)
            results[setting][name] = agg
            write_jsonl(out.with_suffix(".scores.jsonl"), scores)
            main_key = ds.columns[0][0]
            log(f"[bench] {setting} / {name}: {main_key}={agg.get(main_key)} ({secs:.0f}s)")
    return {"conversion": stats, "index": index, "results": results, "dropped_flags": dropped,
            "questions": n_questions}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Run a VDGR benchmark with the real CLI.")
    ap.add_argument("dataset", choices=sorted(DATASETS))
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    ap.add_argument("--quick", action="store_true",
                    help=f"only {', '.join(QUICK_CONFIGS)} on the first 20 questions per setting")
    ap.add_argument("--configs", help="comma-separated configuration names (default: all)")
    ap.add_argument("--limit", type=int, help="first N questions per setting")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--index-args", default="", help="extra arguments for `vdgr index`, one string")
    a = ap.parse_args(argv)
    ds = DATASETS[a.dataset]
    wanted = set(QUICK_CONFIGS) if a.quick else None
    if a.configs:
        wanted = {c.strip() for c in a.configs.split(",")}
    configs = [c for c in CONFIGS if wanted is None or c[0] in wanted]
    limit = a.limit or (20 if a.quick else None)
    report = {"dataset": ds.name,
              "command": "python -m bench.quality.run_eval " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:])),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "k": a.k, "ks": list(ds.ks),
              "columns": [list(c) for c in ds.columns], "configs": [[n, f] for n, f in configs],
              "reference": [[label, figs] for label, figs in ds.reference]}
    try:
        report.update(evaluate(ds, a.work.resolve(), configs, limit, a.k, shlex.split(a.index_args)))
    except RuntimeError as e:
        print(f"[bench] {e}", file=sys.stderr)
        return 1
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"{ds.name}.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (a.out / f"{ds.name}.md").write_text(render(report), encoding="utf-8")
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
