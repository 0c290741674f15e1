"""Build benchmark: the whole EManual corpus (S10 + 32 manuals) with the real model.

One command::

    .venv/bin/python -m bench.performance.bench_build [--work bench/work] [--embedding minilm] [--repeats 2]

Measures, side by side in one run on one machine:
  1. the full build (`vdgr index`, a subprocess): wall time, chunks/s, peak RSS;
  2. embedding alone, in one process: the same texts the build embedded (the distinct content
     and directory-summary texts, read back from the built index) in one `embed()` call, in
     the embedder's reproducible calls (packed) and then (first run), for the cost of that, in
     free batches padded to their longest text;
each ``--repeats`` times in turn (default 2: timings on a shared VM move by several percent from
run to run), and reports the ratio of the best build to the best embedding alone, with every
run's figures (goal: at most 1.3). Writes bench/out/build.json.
"""
from __future__ import annotations

import json
import resource
import shutil
import sys
import time

from bench.common import emanual_all_corpus, perf_arguments, run_timed, vdgr_command
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine

_EMBED_ALONE = r"""
import json, sys, time
from schemas import tables as T
from schemas.config import EmbeddingConfig
from vdgr_core.embedding import make_embedder
from vdgr_core.indexing.rows import content_embedding_text
from vdgr_core.store.reader import IndexReader
r = IndexReader(sys.argv[1])
c = r.arrow(T.CONTENTS, ["path", "text"]).to_pylist()
d = r.arrow(T.DIRECTORIES, ["full_path", "summary"]).to_pylist()
texts = [content_embedding_text(x["path"], x["text"]) for x in c]
texts += [(" > ".join(x["full_path"][1:]) or x["full_path"][0]) + "\n" + x["summary"] for x in d]
distinct = sorted(set(texts))
t0 = time.perf_counter()
e = make_embedder(EmbeddingConfig(kind=sys.argv[2]))
t1 = time.perf_counter()
grouped = e.embed(distinct)
t2 = time.perf_counter()
out = {"texts": len(texts), "distinct": len(distinct), "load_s": t1 - t0, "embed_s": t2 - t1,
       "batching": getattr(e, "batching", None)}
if hasattr(e, "batching") and sys.argv[3] == "padded":
    # unconstrained batching (longest first, padded to the batch's longest text), side by side
    e.batching = "free"
    t3 = time.perf_counter()
    padded = e.embed(distinct)
    out["padded_embed_s"] = time.perf_counter() - t3
    out["padded_max_abs_diff"] = float(abs(padded - grouped).max())
print(json.dumps(out))
"""


def main(argv=None) -> int:
    args = perf_arguments(__doc__.split("\n")[0], "build.json", argv, repeats=2)
    corpus = emanual_all_corpus(args.work)
    index = args.work / "bench_build_index"
    builds, alones, embed, build_out = [], [], None, ""
    for repeat in range(args.repeats):        # build, then embedding alone, in turn
        if index.exists():
            shutil.rmtree(index)
        build_s, build_out = run_timed([vdgr_command(), "index", str(corpus), "--index", str(index),
                                         "--embedding", args.embedding, "-q"])
        if repeat == 0:                       # the build's processes only (the largest child so far)
            peak_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        _, embed_out = run_timed([sys.executable, "-c", _EMBED_ALONE, str(index), args.embedding,
                                  "padded" if repeat == 0 else "packed"])
        run = json.loads(embed_out.strip().splitlines()[-1])
        embed = embed or run                  # the first run also measures free batches, side by side
        builds.append(build_s)
        alones.append(run["embed_s"] + run["load_s"])
    build_s, alone_s = min(builds), min(alones)
    manifest = json.loads((index / "manifest.json").read_text())
    chunks = manifest["counts"]["contents"]
    result = {
        "kind": "build",
        "dataset": "build",
        "corpus": "EManual S10 + 32 manuals",
        "embedding": args.embedding,
        "documents": manifest["counts"]["documents"],
        "chunks": chunks,
        "directories": manifest["counts"]["directories"],
        "build_wall_s": round(build_s, 1),
        "chunks_per_s": round(chunks / build_s, 1),
        "peak_rss_mb": round(peak_rss_mb),
        "embed_texts": embed["texts"],
        "embed_distinct_texts": embed["distinct"],
        "embed_alone_s": round(embed["embed_s"], 1),
        "embed_alone_with_load_s": round(alone_s, 1),
        "ratio_build_to_embed_alone": round(build_s / alone_s, 2),
        "repeats": args.repeats,
        "build_runs_s": [round(b, 1) for b in builds],
        "embed_alone_runs_s": [round(a, 1) for a in alones],
        "padded_embed_alone_s": round(embed["padded_embed_s"], 1) if "padded_embed_s" in embed else None,
        "grouped_to_padded": (round(embed["embed_s"] / embed["padded_embed_s"], 2)
                              if embed.get("padded_embed_s") else None),
        "padded_max_abs_diff": embed.get("padded_max_abs_diff"),
        "batching": embed.get("batching"),
        "embeddings_computed": _computed(build_out),
        "build_summary": build_out.strip().splitlines()[-10:],
        "command": "python -m bench.performance.bench_build",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit(),
        "machine": machine(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "build_summary"}, indent=2))
    return 0


def _computed(summary: str):
    import re

    m = re.search(r"embeddings\s+([\d,]+) computed", summary)
    return int(m.group(1).replace(",", "")) if m else None


def render(report: dict) -> str:
    """The BENCHMARKS.md block of a bench_build report."""
    m = report["machine"]
    r = report
    return "\n".join([
        "### build (full build vs embedding alone)", "",
        f"- command: `{r['command']}`", f"- date: {r['date']}; commit: {r.get('commit') or 'unknown'}",
        machine_line(m),
        f"- corpus: {r['corpus']}, {r['embedding']} embeddings; `vdgr index` in a subprocess, then the same "
        "distinct texts embedded alone in one process (model load included)", "",
        "| documents | chunks | directory nodes | build wall s | chunks/s | peak RSS MB (children) | texts embedded (distinct) | embed alone s | build / embed alone |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| {r['documents']:,} | {r['chunks']:,} | {r['directories']:,} | {r['build_wall_s']} | {r['chunks_per_s']} | "
        f"{r['peak_rss_mb']:,} | {r['embed_texts']:,} ({r['embed_distinct_texts']:,}) | {r['embed_alone_with_load_s']} | "
        f"{r['ratio_build_to_embed_alone']} |", "",
        *([f"Best of {r['repeats']} runs of each, in turn: builds {', '.join(map(str, r['build_runs_s']))} s; "
           f"embedding alone {', '.join(map(str, r['embed_alone_runs_s']))} s."] if r.get("repeats") else []),
        *([f"Embeddings the build computed: {r['embeddings_computed']:,} (distinct texts: "
           f"{r['embed_distinct_texts']:,})."] if r.get("embeddings_computed") is not None else []),
        *([f"The embedder's reproducible calls{' (' + r['batching'] + ')' if r.get('batching') else ''} against free "
           f"batches padded to their longest text, the same "
           f"distinct texts in one process: {r['embed_alone_s']} s vs {r['padded_embed_alone_s']} s "
           f"(ratio {r['grouped_to_padded']}); largest vector difference between the two "
           f"{r['padded_max_abs_diff']:.1e}."] if r.get("padded_embed_alone_s") else []), ""])


if __name__ == "__main__":
    sys.exit(main())
