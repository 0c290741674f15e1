"""What reading vectors from blocks costs the query side: one process, side by side.

``python -m bench.performance.bench_blocks [--index bench/work/scale/index_1m]`` answers the bench_scale
questions (``bench/work/scale/questions.json``) with no domain given under all routes, twice
per variant, and prints the second pass's total p50 / p95 / mean and the mean and p95 of the
slowest stages:

- ``blocks``: the layouts' vectors as the query side reads them (vdgr_core/store/vector_blocks.py:
  one product per block, put back in local order);
- ``matrix``: the same vectors copied once into one in-memory matrix per domain and kind (what a
  scan cost before the vectors moved into blocks, without the memory-mapped pages).

Both variants run in the same process one after the other, so they share the machine's state;
the matrix variant holds the scanned domains' vectors in anonymous memory. It prints JSON with
the command, commit and date; its figures are not merged into BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def _second_pass(index: str, questions: list[str]) -> dict:
    from schemas.config import EmbeddingConfig, QueryConfig
    from vdgr_core.query.knowledge_base import KnowledgeBase
    from vdgr_core.store.manifest import read_manifest

    m = read_manifest(index)
    emb = EmbeddingConfig.for_index(m.embedding_model, m.dim)
    cfg = QueryConfig(embedding=emb, routes=("hybrid", "toc", "graph"), backtrack=True, reflection=True,
                      routing=True)
    kb = KnowledgeBase.open(index, cfg)
    for q in questions:                 # first pass: every layout the questions touch is mapped
        kb.query(q)
    totals, stages = [], {}
    for q in questions:
        t = kb.query(q).trace.timings_ms
        totals.append(t["total"])
        for k, v in t.items():
            stages.setdefault(k, []).append(v)
    slow = sorted(stages.items(), key=lambda kv: -np.mean(kv[1]))[:7]
    return {"total": {"p50_ms": round(float(np.percentile(totals, 50)), 1),
                      "p95_ms": round(float(np.percentile(totals, 95)), 1),
                      "mean_ms": round(float(np.mean(totals)), 1)},
            "stages_mean_p95_ms": {k: [round(float(np.mean(v)), 1), round(float(np.percentile(v, 95)), 1)]
                                   for k, v in slow}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", default=str(REPO / "bench" / "work" / "scale" / "index_1m"))
    ap.add_argument("--questions", default=str(REPO / "bench" / "work" / "scale" / "questions.json"))
    a = ap.parse_args(argv)
    from bench.report.provenance import commit
    from vdgr_core.store import domain_layout

    questions = [q["question"] if isinstance(q, dict) else q for q in json.loads(Path(a.questions).read_text())]
    out = {"command": "python -m bench.performance.bench_blocks " + " ".join(argv if argv is not None else sys.argv[1:]),
           "commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "questions": len(questions), "blocks": _second_pass(a.index, questions)}
    blocked = domain_layout.DomainLayout.vectors

    def as_matrix(self, kind):
        key = "_matrix_" + kind
        if key not in self.__dict__:
            v = blocked(self, kind)
            self.__dict__[key] = None if v is None else np.ascontiguousarray(np.asarray(v))
        return self.__dict__[key]

    domain_layout.DomainLayout.vectors = as_matrix
    try:
        out["matrix"] = _second_pass(a.index, questions)
    finally:
        domain_layout.DomainLayout.vectors = blocked
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
