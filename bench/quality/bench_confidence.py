"""Calibration of the retrieval confidence (``vdgr_core/query/confidence.py``).

``python -m bench.quality.bench_confidence [--work bench/work] [--embedding hashing|minilm]``

Labelled questions against the EManual S10 index (``bench.quality.run_eval emanual``'s conversion):

- the 50 expert S10 questions: label 1 when the gold section is among the top 5 evidence
  items (the answer is there to give), else 0;
- 50 DCD questions (residential complexes, ``bench.prepare.convert_dcd``) asked of the same index:
  label 0 (the index cannot answer them).

Reported: the reliability table (per score bin, the share of label 1: how far the score can be
read as a probability), a Platt fit ``P(label 1) = 1 / (1 + exp(-(a * score + b)))`` and what
the corrective threshold (``QueryConfig.min_confidence``) does: the share of unanswerable
questions that get a clarification and of answerable, found ones that get one wrongly.
Report: ``bench/out/confidence.json``, merged into BENCHMARKS.md (block ``confidence``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import shlex
import sys
from pathlib import Path

import numpy as np

from bench.common import REPO, read_jsonl
from bench.prepare.datasets import DATASETS
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine
from bench.vdgr_cli import ensure_index
from schemas.config import EmbeddingConfig, QueryConfig
from vdgr_core.eval import path_matches
from vdgr_core.query.confidence import retrieval_confidence

BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0001)
N_NEGATIVE = 50


def platt(scores: np.ndarray, labels: np.ndarray, iters: int = 100) -> tuple[float, float]:
    """Logistic regression of labels on scores (Newton's method, tiny ridge); (a, b)."""
    X = np.stack([scores, np.ones_like(scores)], axis=1)
    w = np.zeros(2)
    for _ in range(iters):
        p = 1 / (1 + np.exp(-X @ w))
        g = X.T @ (p - labels) + 1e-3 * w
        H = X.T @ (X * (p * (1 - p))[:, None]) + 1e-3 * np.eye(2)
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return float(w[0]), float(w[1])


def measure(work: Path, embedding: str, threshold: float) -> dict:
    from vdgr_core.query.knowledge_base import KnowledgeBase
    from vdgr_core.store.manifest import read_manifest

    base = work / "emanual"
    DATASETS["emanual"].convert(base)
    args = ["--embedding", embedding]
    ensure_index(base / "corpus", base / "index", args, base / "logs" / "index.log")
    DATASETS["dcd"].convert(work / "dcd")
    m = read_manifest(str(base / "index"))
    kb = KnowledgeBase.open(str(base / "index"), QueryConfig(
        embedding=EmbeddingConfig.for_index(m.embedding_model, m.dim)))
    rows = []
    for q in read_jsonl(base / "questions_s10.jsonl"):
        r = kb.query(q["question"], with_answer=False)
        hit = any(path_matches(e.path, g) for e in r.evidence[:5] for g in q["gold"]["paths"])
        rows.append({"id": q["id"], "kind": "answerable", "label": int(hit),
                     "score": retrieval_confidence(q["question"], r.evidence, threshold).score})
    for q in read_jsonl(work / "dcd" / "questions_dcd.jsonl")[:N_NEGATIVE]:
        r = kb.query(q["question"], with_answer=False)
        rows.append({"id": q["id"], "kind": "unanswerable", "label": 0,
                     "score": retrieval_confidence(q["question"], r.evidence, threshold).score})
    s = np.array([x["score"] for x in rows])
    y = np.array([x["label"] for x in rows], dtype=float)
    bins = []
    for lo, hi in zip(BINS, BINS[1:]):
        sel = (s >= lo) & (s < hi)
        bins.append({"range": f"{lo:.1f}-{min(hi, 1.0):.1f}", "n": int(sel.sum()),
                     "share_label1": round(float(y[sel].mean()), 3) if sel.any() else None})
    a, b = platt(s, y)
    p = 1 / (1 + np.exp(-(a * s + b)))
    low = s < threshold
    ans_found = np.array([x["kind"] == "answerable" and x["label"] == 1 for x in rows])
    unans = np.array([x["kind"] == "unanswerable" for x in rows])
    return {"n": len(rows), "answerable": int(sum(x["kind"] == "answerable" for x in rows)),
            "answerable_found": int(ans_found.sum()), "unanswerable": int(unans.sum()),
            "bins": bins, "platt": {"a": round(a, 4), "b": round(b, 4)},
            "brier_raw": round(float(np.mean((s - y) ** 2)), 4),
            "brier_platt": round(float(np.mean((p - y) ** 2)), 4),
            "threshold": threshold,
            "clarify_unanswerable": round(float(low[unans].mean()), 3),
            "clarify_answerable_found": round(float(low[ans_found].mean()), 3) if ans_found.any() else None,
            "p_at_threshold": round(1 / (1 + math.exp(-(a * threshold + b))), 3),
            "per_question": rows}


def render(report: dict) -> str:
    m, r = report["machine"], report["results"]
    lines = ["### confidence (retrieval confidence calibration)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(m),
             f"- index: EManual S10 ({report['embedding']} embeddings), default configuration; {r['answerable']} "
             f"S10 questions (label 1 when the gold section is in the top 5: {r['answerable_found']}) and "
             f"{r['unanswerable']} DCD questions asked of it (label 0)", "",
             "| score | questions | share with the answer in the evidence |", "|---|---|---|"]
    for b in r["bins"]:
        lines.append(f"| {b['range']} | {b['n']} | {'-' if b['share_label1'] is None else b['share_label1']} |")
    lines += ["", f"Platt fit: P = 1 / (1 + exp(-({r['platt']['a']} x score + {r['platt']['b']}))); Brier score "
              f"{r['brier_raw']} for the raw score, {r['brier_platt']} after the fit. At the corrective threshold "
              f"{r['threshold']} (P = {r['p_at_threshold']}): {100 * r['clarify_unanswerable']:.0f}% of the "
              f"unanswerable questions get a clarification, "
              f"{100 * (r['clarify_answerable_found'] or 0):.0f}% of the answerable, found ones get one wrongly."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--embedding", default="hashing", choices=["minilm", "hashing"])
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    a = ap.parse_args(argv)
    threshold = QueryConfig().min_confidence
    results = measure(a.work, a.embedding, threshold)
    report = {"dataset": "confidence", "kind": "confidence",
              "command": "python -m bench.quality.bench_confidence " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:])),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "embedding": a.embedding, "results": results}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "confidence.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    from bench.report.update_benchmarks_md import update
    update(REPO / "BENCHMARKS.md", a.out, ["confidence"])
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
