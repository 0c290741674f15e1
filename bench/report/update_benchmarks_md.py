"""Merge bench/out/<dataset>.json results into BENCHMARKS.md.

Each data set owns one block between ``<!-- bench:<name>:begin -->`` and
``<!-- bench:<name>:end -->``; a block is replaced in place, a new one is appended, and
everything outside the blocks (hand-written text) is kept. The block carries the command,
date and machine (``uname -a``, CPU count) recorded by ``bench.quality.run_eval``.

``python -m bench.report.update_benchmarks_md [--out bench/out] [--file BENCHMARKS.md] [names...]``

A block lives in BENCHMARKS.md or, for research prototypes, in docs/RESEARCH.md
(``DOC_FILES``): it is merged into whichever of them holds it (``block_file``), and a block
neither holds yet is appended to BENCHMARKS.md (``--file``).

The reports of ``python -m bench.performance.bench_query`` (``latency.json``), ``bench.performance.bench_serve``
(``serve.json``), ``bench.quality.bench_compress`` (``compress.json``) and ``bench.quality.bench_llm``
(``llm.json``) are merged the same way, each rendered by its own module's ``render``.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from bench.common import REPO
from bench.report.markdown import render

HEADER = """# Benchmarks

Produced by `python -m bench.quality.run_eval <dataset>` and merged by
`python -m bench.report.update_benchmarks_md`. Rates are percentages over questions; R@k counts
distinct sections (passages, documents) among the evidence; latency is the query's own
wall time (`trace.timings_ms.total`). See bench/README.md for the data and the metrics.
"""


BENCHMARKS = REPO / "BENCHMARKS.md"
RESEARCH = REPO / "docs" / "RESEARCH.md"
DOC_FILES = (BENCHMARKS, RESEARCH)      # where blocks live; a new block goes to the first


def holds_block(text: str, name: str) -> bool:
    return f"<!-- bench:{name}:begin -->" in text


def block_file(name: str, files=None) -> Path:
    """The file among ``files`` (default ``DOC_FILES``) that holds block ``name``; the first
    when none does."""
    files = files or DOC_FILES
    for f in files:
        if f.exists() and holds_block(f.read_text(encoding="utf-8"), name):
            return f
    return files[0]


def write_block(name: str, text: str, files=None) -> Path:
    """Merge ``text`` as block ``name`` into the file of ``files`` that holds it; return it."""
    md = block_file(name, files)
    md.write_text(merge_block(md.read_text(encoding="utf-8"), name, text), encoding="utf-8")
    return md


RENDERERS = {"latency": "bench.performance.bench_query", "serve": "bench.performance.bench_serve", "confidence": "bench.quality.bench_confidence",
             "compress": "bench.quality.bench_compress", "llm": "bench.quality.bench_llm", "build": "bench.performance.bench_build",
             "update": "bench.performance.bench_update", "cluster": "bench.performance.bench_cluster"}


def merge_block(text: str, name: str, body: str) -> str:
    """Replace (or append) the block of data set ``name`` in ``text``.

    Examples
    --------
    >>> t = merge_block("# B\\n", "x", "one\\n")
    >>> merge_block(t, "x", "two\\n").count("two"), merge_block(t, "x", "two\\n").count("one")
    (1, 0)
    """
    begin, end = f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text, count=1)
    return text.rstrip("\n") + "\n\n" + block + "\n"


def publish(report: dict, out: Path, block: str, text: str, markdown: bool = True) -> None:
    """Write ``report`` to ``out`` as JSON, print its rendering ``text``, and (``markdown``)
    merge ``text`` as the block ``block`` into the file that holds it (``block_file``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(text)
    if markdown:
        write_block(block, text)


def update(md_file: Path, out_dir: Path, names: list[str] | None = None, others=None) -> list[str]:
    """Merge the JSON reports of ``names`` (default: all in ``out_dir``); return the names.

    A block that one of ``others`` (default: docs/RESEARCH.md) holds and ``md_file`` does not
    is merged there."""
    others = (RESEARCH,) if others is None else others
    reports = sorted(out_dir.glob("*.json"))
    if names:
        reports = [p for p in reports if p.stem in names]
    text = md_file.read_text(encoding="utf-8") if md_file.exists() else HEADER
    done = []
    for p in reports:
        report = json.loads(p.read_text(encoding="utf-8"))
        if "dataset" not in report:  # a report that writes its own block (ablation) or an older one
            continue
        if report.get("kind") in RENDERERS:          # a performance report: its module renders it
            import importlib
            body = importlib.import_module(RENDERERS[report["kind"]]).render(report)
        else:
            body = render(report)
        name = report["dataset"]
        elsewhere = None if holds_block(text, name) else next(
            (f for f in others if f.exists() and holds_block(f.read_text(encoding="utf-8"), name)), None)
        if elsewhere is not None:
            write_block(name, body, (elsewhere,))
        else:
            text = merge_block(text, name, body)
        done.append(name)
    md_file.write_text(text, encoding="utf-8")
    return done


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="data sets to merge (default: every report)")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    ap.add_argument("--file", type=Path, default=REPO / "BENCHMARKS.md")
    a = ap.parse_args(argv)
    print("merged:", ", ".join(update(a.file, a.out, a.names)) or "nothing")


if __name__ == "__main__":
    main()
