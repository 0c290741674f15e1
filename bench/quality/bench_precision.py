"""Retrieval quality of each embedding precision, development and test halves apart.

One command::

    .venv/bin/python -m bench.quality.bench_precision [--precisions fp32,bf16,int8] [--sets ...] [--no-markdown]

Every set of :mod:`bench.quality.ablation` is indexed once per precision (``vdgr index
--embedding-precision P``, work folders ``<set>_<P>``) and asked under the single dense route,
route 1 (``hybrid``) and the default configuration (``full``). The table gives each set's primary
metric at 5 (R@5; passage recall@5 on MuSiQue; value@5 on DCD) per half, the difference of each
precision to the first one, and how many questions of each half scored lower / higher than under
the first: on 24 to 52 questions a half, one passage of one question moves the metric by 0.5 to 4
points, so the counts say whether a difference is one rank flip or many.

A precision may replace the first as a default only where no development half of the
configurations a user runs (:data:`GATED`: the default configuration and route 1) loses more than
:data:`MAX_DEV_LOSS` (issue 27's rule); the single dense route is an ablation row, reported, not
gated. The verdict line says which precisions pass. Writes bench/out/precision.json and the
``precision`` block of BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import datetime
import sys

from bench.common import REPO
from bench.prepare.splits import HALVES
from bench.quality.ablation import SETS, run_set, with_precision, write_report
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine

CONFIGS = ("dense", "hybrid", "full")
#: the configurations a user runs (route 1 and the default): the only rows the rule gates
GATED = ("hybrid", "full")
#: the most a development half's primary metric at 5 may lose for a precision to be a default
MAX_DEV_LOSS = 0.005


def run(precisions: list[str], sets: list[str], work) -> dict:
    """``{set: {precision: run_set(...) result, per question}}`` plus the header facts."""
    out: dict = {"kind": "precision", "precisions": precisions, "configs": list(CONFIGS),
                 "gated": list(GATED), "sets": {}}
    for name in sets:
        out["sets"][name] = {p: run_set(with_precision(SETS[name], p), work, set(CONFIGS), per_question=True)
                             for p in precisions}
    return out


def changed(base: list[float], other: list[float]) -> tuple[int, int]:
    """(questions that scored lower, questions that scored higher) in ``other`` than in ``base``,
    question by question."""
    return sum(b < a for a, b in zip(base, other)), sum(b > a for a, b in zip(base, other))


def losses(report: dict) -> dict[str, list[str]]:
    """Per precision after the first: the (set, configuration) rows of :data:`GATED` whose
    development half lost more than :data:`MAX_DEV_LOSS` against the first precision."""
    base, *others = report["precisions"]
    bad: dict[str, list[str]] = {p: [] for p in others}
    for name, by_p in report["sets"].items():
        key = f"{SETS[name].primary}@5"
        for p in others:
            for c in report.get("gated", GATED):
                delta = by_p[p]["configs"][c]["dev"][key] - by_p[base]["configs"][c]["dev"][key]
                if delta < -MAX_DEV_LOSS:
                    bad[p].append(f"{name} / {c} ({100 * delta:+.1f})")
    return bad


def render(report: dict) -> str:
    base, *others = report["precisions"]
    gated = report.get("gated", list(GATED))
    lines = ["### precision", "", f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(report["machine"]),
             "- each set indexed once per precision; primary metric at 5 (R@5, MuSiQue passage recall@5, "
             "DCD value@5), development / test halves by sha256(question id); differences against "
             f"{base}, and the questions of each half that scored lower / higher than under {base}; "
             f"gated (the rule): {', '.join(gated)}", ""]
    head = " | ".join(f"{p} dev / test" for p in report["precisions"])
    diffs = " | ".join(f"{p} - {base} dev / test | {p}: questions lower / higher, dev; test" for p in others)
    lines += [f"| set | configuration | {head} | {diffs} |",
              "|---|---|" + "---|" * (len(report["precisions"]) + 2 * len(others))]
    for name, by_p in report["sets"].items():
        key = f"{SETS[name].primary}@5"
        for c in CONFIGS:
            vals = {p: [100 * by_p[p]["configs"][c][h][key] for h in HALVES] for p in report["precisions"]}
            cells = " | ".join(" / ".join(f"{v:.1f}" for v in vals[p]) for p in report["precisions"])
            parts = []
            for p in others:
                delta = " / ".join(f"{a - b:+.1f}" for a, b in zip(vals[p], vals[base]))
                scores = by_p[p].get("scores", {}).get(c)
                counts = "; ".join("%d / %d" % changed(by_p[base]["scores"][c][h], scores[h])
                                   for h in HALVES) if scores else "-"
                parts.append(f"{delta} | {counts}")
            label = c if c in gated else f"{c} (not gated)"
            lines.append(f"| {name} | {label} | {cells} | {' | '.join(parts)} |")
    lines.append("")
    for p, bad in report["losses"].items():
        lines.append(f"Verdict for {p}: " + (f"no development half of {', '.join(gated)} loses more than "
                                             f"{100 * MAX_DEV_LOSS:.1f} point; it may be a default."
                                             if not bad else "not a default; development halves that lose more "
                                             f"than {100 * MAX_DEV_LOSS:.1f} point: " + "; ".join(bad) + "."))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--precisions", default="fp32,bf16,int8", help="comma-separated; the first is the reference")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--work", default=str(REPO / "bench" / "work"))
    ap.add_argument("--no-markdown", action="store_true")
    a = ap.parse_args(argv)
    from pathlib import Path

    report = run([p.strip() for p in a.precisions.split(",")], [s.strip() for s in a.sets.split(",")],
                 Path(a.work).resolve())
    given = " ".join(argv if argv is not None else sys.argv[1:])
    report.update(command=f"python -m bench.quality.bench_precision {given}".strip(),
                  date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  machine=machine(), commit=commit())
    report["losses"] = losses(report)
    text = render(report)
    print(text)
    if not a.no_markdown:
        write_report("precision", report, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
