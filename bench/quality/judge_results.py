"""Ragas-style LLM-judged metrics over a batch of query results (needs an LLM endpoint).

One command::

    .venv/bin/python -m bench.quality.judge_results --questions IN.jsonl --results OUT.jsonl \\
        --llm-base-url http://127.0.0.1:8080/v1 --llm-model M [--out judged.json]

IN.jsonl are the harness's question files (with ``gold.answer`` as the reference when present),
OUT.jsonl the matching `vdgr query --questions` results. Prints and writes the mean faithfulness,
answer relevance, context precision and context recall.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import mean

from schemas.config import LLMConfig
from vdgr_core.eval.llm_judge import judge
from vdgr_core.llm.client import LLMClient


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=Path, required=True)
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--llm-base-url", required=True)
    ap.add_argument("--llm-model", required=True)
    ap.add_argument("--llm-cache")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    gold = {q["id"]: q.get("gold", {}) for q in _jsonl(args.questions)}
    llm = LLMClient(LLMConfig(base_url=args.llm_base_url, model=args.llm_model, cache_path=args.llm_cache))
    per_metric: dict[str, list[float]] = {}
    for r in _jsonl(args.results):
        scores = judge(llm, r["question"], r["answer"], [e["text"] for e in r["evidence"]],
                       reference=gold.get(r["id"], {}).get("answer"))
        for name, value in vars(scores).items():
            if value is not None:
                per_metric.setdefault(name, []).append(value)
    report = {name: round(mean(values), 4) for name, values in per_metric.items()}
    report["judge_calls"] = llm.total_calls()
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
