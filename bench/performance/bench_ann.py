"""ANN recall and latency of an index's LanceDB vector indexes over a grid of search settings.

    python -m bench.performance.bench_ann --index bench/work/scale/index_1m [--domain Galaxy_S10]
        [--refine 4,16] [--ef default,1000,2000] [--nprobes 64]

For the 50 S10 questions (embedded with the index's own embedder), each vector table
(contents, directories), each scope (the domain as prefilter; scope-free) and each setting
(``nprobes``, ``refine_factor``, ``ef``; "default": LanceDB's 1.5 x the rows asked for): the
top 10 of a limit-10 search against an exact scan of the same rows and prefilter (a row counts
when its distance is within 1e-6 of the exact 10th, as ``bench_scale`` counts it: versions
repeat texts; a scope of fewer rows counts against all of them), and the search's p50 / p95
wall time in this process. It reads the tables at the
versions the manifest names and writes nothing in the index. The report goes to
``bench/out/ann.json`` and the ``ann`` block of BENCHMARKS.md (``--no-markdown``: not there).

It is how ``QueryConfig.ann_refine_factor`` / ``ann_ef`` were chosen: the query side reaches
the vector index only for scopes larger than ``exact_max_rows`` rows.
"""
from __future__ import annotations

from bench.report.markdown import machine_line

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np

from bench.common import REPO

KEY = {"contents": "chunk_id", "directories": "node_id"}


def _ints(text: str) -> list[Optional[int]]:
    return [None if x == "default" else int(x) for x in text.split(",") if x]


def _pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return round(1000 * v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))], 1)


def sweep(index: str, domain: str, questions: list[str], nprobes: list[int], refines: list[int],
          efs: list[Optional[int]]) -> list[dict]:
    """One row per (table, scope, nprobes, refine, ef): recall@10 and latency."""
    from schemas.config import EmbeddingConfig
    from vdgr_core.embedding import make_embedder
    from vdgr_core.query.scope import QueryScope
    from vdgr_core.store.filters import SearchScope
    from vdgr_core.store.reader import IndexReader

    reader = IndexReader(index)
    m = reader.manifest
    embedder = make_embedder(EmbeddingConfig.for_index(m.embedding_model, m.dim))
    qvecs = [np.asarray(v, dtype=np.float32) for v in embedder.embed(questions)]
    rows = []
    for table in ("contents", "directories"):
        if table not in m.vector_indexes:
            continue
        t = reader.table(table)
        for label, where in (("scoped", QueryScope(SearchScope(domains=(domain,))).lance_expr()),
                             ("scope-free", None)):
            def search(v, exact=False):
                q = t.search(v).metric("cosine").limit(10).select([KEY[table], "_distance"])
                if where is not None:
                    q = q.where(where, prefilter=True)
                return q.bypass_vector_index() if exact else q
            exact = []          # (distance of the exact k-th, k): k < 10 where the scope holds fewer rows
            for v in qvecs:
                d = search(v, exact=True).to_arrow().column("_distance").to_pylist()
                exact.append((d[-1], len(d)) if d else (None, 0))
            for probes in nprobes:
                for refine in refines:
                    for ef in efs:
                        hits = total = 0
                        walls = []
                        for v, (last, k) in zip(qvecs, exact):
                            q = search(v).nprobes(probes).refine_factor(refine)
                            if ef is not None:       # as the query side sets it (vectors.py)
                                q = q.ef(max(ef, 10 * refine))
                            t0 = time.perf_counter()
                            got = q.to_arrow().column("_distance").to_pylist()
                            walls.append(time.perf_counter() - t0)
                            if k:
                                hits += sum(1 for x in sorted(got)[:k] if x <= last + 1e-6)
                                total += k
                        rows.append({"table": table, "scope": label, "nprobes": probes, "refine_factor": refine,
                                     "ef": ef, "recall_at_10": round(hits / max(1, total), 3),
                                     "p50_ms": _pct(walls, 50), "p95_ms": _pct(walls, 95), "n": len(walls)})
                        print(json.dumps(rows[-1]), flush=True)
    return rows


def render(report: dict) -> str:
    lines = ["### ann (vector-index recall and latency by search setting)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report['commit']}",
             machine_line(report["machine"]) + " (shared; timings noisy)",
             f"- index: `{report['index']}` ({report['rows']})",
             "- the 50 S10 questions; recall@10 of a limit-10 search against an exact scan of the same rows and "
             "prefilter (a row counts within 1e-6 of the exact 10th distance); scoped: the question's domain as "
             "prefilter; ef \"default\": LanceDB's 1.5 x the rows asked for (limit x refine factor)", "",
             "| table | scope | nprobes | refine factor | ef | recall@10 | p50 / p95 ms |", "|---|---|---|---|---|---|---|"]
    for r in report["results"]:
        lines.append(f"| {r['table']} | {r['scope']} | {r['nprobes']} | {r['refine_factor']} | "
                     f"{r['ef'] if r['ef'] is not None else 'default'} | {r['recall_at_10']} | "
                     f"{r['p50_ms']} / {r['p95_ms']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from bench.performance.bench_scale import S10_DOMAIN, questions
    from bench.report.provenance import stamp
    from bench.report.update_benchmarks_md import publish

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--domain", default=S10_DOMAIN)
    ap.add_argument("--nprobes", default="64")
    ap.add_argument("--refine", default="4,16")
    ap.add_argument("--ef", default="default,1000,2000")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "ann.json")
    ap.add_argument("--no-markdown", action="store_true")
    a = ap.parse_args(argv)
    command = "python -m bench.performance.bench_ann " + " ".join(sys.argv[1:] if argv is None else argv)
    results = sweep(a.index, a.domain, questions(), _ints(a.nprobes), _ints(a.refine), _ints(a.ef))
    from vdgr_core.store.manifest import read_manifest

    m = read_manifest(a.index)
    report = {**stamp(command), "index": a.index,
              "rows": ", ".join(f"{t} {v['indexed_rows'] + v['unindexed_rows']:,} rows, {v['type']}"
                                for t, v in sorted(m.vector_indexes.items()) if t in KEY),
              "results": results}
    publish(report, a.out, "ann", render(report), markdown=not a.no_markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
