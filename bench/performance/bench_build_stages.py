"""Where a build's time goes outside the model: a sampled profile of the hashing build by stage.

One command::

    .venv/bin/python -m bench.performance.bench_build_stages [--work bench/work] [--rate 200] [--no-markdown]

Runs ``vdgr index`` of the EManual corpus (S10 + 32 manuals) with the hashing embedder under
py-spy (``pip install py-spy``; it samples the process from outside, so a call that releases
the interpreter lock is not sampled more often than Python code, as an in-process sampling
thread would). Each sample goes to the stage of the innermost frame that is either one of the
stage's files (:data:`STAGES`) or Beam's own work (coders, bundle plumbing, runner); the
project's helper files not listed, and libraries (pyarrow, lancedb, tantivy, detect-secrets,
re, Beam's file systems), count for the stage that called them. Reports each stage's share of
the samples and of the wall time, and chunks/s. Writes bench/out/build_stages.json and the
``build_stages`` block.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

from bench.common import REPO, emanual_all_corpus
from bench.report.markdown import machine_line
from bench.report.provenance import stamp
from bench.report.update_benchmarks_md import publish

#: (stage, the project's files whose frames name it); the innermost such frame of a sample wins.
#: Files not listed (ids, tokens, digests, locations, ...) are helpers: their time counts for
#: the stage that called them.
STAGES: list[tuple[str, tuple[str, ...]]] = [
    ("read and parse", ("vdgr_core/parsing/", "vdgr_core/indexing/document.py", "vdgr_core/corpus.py",
                        "vdgr_core/metadata.py", "transforms/parse.py")),
    ("chunk", ("vdgr_core/chunking.py",)),
    ("secret scanning", ("vdgr_core/safety/", "vdgr_core/indexing/mask.py")),
    ("entities and annotation", ("vdgr_core/entities.py", "vdgr_core/indexing/annotate.py", "vdgr_core/labels.py",
                                 "vdgr_core/sentences.py", "transforms/documents.py")),
    ("co-occurrence", ("vdgr_core/cooccurrence.py",)),
    ("entity merge", ("vdgr_core/indexing/entity_merge.py", "transforms/merge.py")),
    ("directory summaries", ("vdgr_core/summarize.py", "vdgr_core/indexing/tree_summary.py",
                             "transforms/directories.py")),
    ("table rows (pipelines/build.py, indexing/rows.py)", ("pipelines/build.py", "vdgr_core/indexing/rows.py",
                                                          "vdgr_core/indexing/per_document.py")),
    ("embedding (hashing) and its cache", ("vdgr_core/embedding.py", "vdgr_core/indexing/embed_cache.py",
                                           "transforms/embed.py")),
    ("staging files (Arrow IPC)", ("transforms/write.py", "pipelines/staging.py")),
    ("BM25 shards (tantivy)", ("vdgr_core/store/tantivy_shard.py", "transforms/bm25.py")),
    ("commit (LanceDB, layouts, manifest)", ("pipelines/commit.py",)),
    ("pipeline set-up and driver", ("pipelines/", "runners/")),
]
BEAM = "Beam runner (coders, bundles)"
OTHER = "imports and interpreter"


_PROJECT = ("pipelines/", "transforms/", "vdgr_core/", "runners/", "schemas/")


def stage_of(files: list[str]) -> str:
    """The stage of a stack given innermost first (py-spy's file names: the project's relative
    to the repository, libraries relative to site-packages)."""
    for name in files:
        if name.startswith("apache_beam/") and not name.startswith("apache_beam/io/"):
            return BEAM
        if not name.startswith(_PROJECT):
            continue
        for stage, parts in STAGES:
            if any(name.startswith(p) for p in parts):
                return stage
    return OTHER


def stacks(raw: str):
    """(files innermost first, samples) of each line of py-spy's raw output."""
    import re

    frame = re.compile(r"\((.*?):\d+\)$")
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        files = [m.group(1) if (m := frame.search(f)) else "" for f in stack.split(";")]
        yield files[::-1], int(count)


def run(work: Path, rate: int) -> dict:
    import json
    import subprocess
    import tempfile

    from bench.common import vdgr_command

    spy = Path(sys.executable).with_name("py-spy")
    if not spy.is_file():
        raise SystemExit("py-spy is not installed in this environment: pip install py-spy")
    corpus = emanual_all_corpus(work)
    index = work / "bench_build_stages_index"
    shutil.rmtree(index, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "build.raw"
        t0 = time.perf_counter()
        subprocess.run([str(spy), "record", "--rate", str(rate), "--format", "raw", "--output", str(raw),
                        "--", vdgr_command(), "index", str(corpus), "--index", str(index),
                        "--embedding", "hashing", "-q"], check=True, capture_output=True, cwd=REPO)
        wall = time.perf_counter() - t0
        counts: Counter = Counter()
        for files, n in stacks(raw.read_text(encoding="utf-8")):
            if files and files[-1] == "vdgr":       # the main thread (others wait on I/O or locks)
                counts[stage_of(files)] += n
    manifest = json.loads((index / "manifest.json").read_text())
    total = sum(counts.values()) or 1
    stages = [{"stage": s, "samples": n, "share": n / total, "seconds": wall * n / total}
              for s, n in counts.most_common()]
    return {"kind": "build_stages", "corpus": "EManual S10 + 32 manuals", "embedding": "hashing",
            "documents": manifest["counts"]["documents"], "chunks": manifest["counts"]["contents"],
            "wall_s": round(wall, 1), "chunks_per_s": round(manifest["counts"]["contents"] / wall, 1),
            "rate": rate, "samples": total, "stages": stages}


def render(report: dict) -> str:
    lines = ["### build_stages (where a hashing build's time goes)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(report["machine"]),
             f"- corpus: {report['corpus']} ({report['documents']:,} documents, {report['chunks']:,} chunks), "
             f"hashing embedder, `vdgr index` (in-process runner) under py-spy, {report['wall_s']} s with the "
             f"profiler, **{report['chunks_per_s']} chunks/s**; {report['samples']:,} samples at {report['rate']} Hz, "
             "each to the innermost frame of a stage's files or of Beam (a library's time counts for the "
             "project code that called it)", "",
             "| stage | share of samples | seconds (share of wall) |", "|---|---|---|"]
    lines += [f"| {s['stage']} | {s['share'] * 100:.1f}% | {s['seconds']:.1f} |" for s in report["stages"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "build_stages.json")
    ap.add_argument("--no-markdown", action="store_true")
    args = ap.parse_args(argv)
    report = {**stamp("python -m bench.performance.bench_build_stages"), **run(args.work, args.rate)}
    publish(report, args.out, "build_stages", render(report), markdown=not args.no_markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
