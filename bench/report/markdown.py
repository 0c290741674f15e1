"""Render a run_eval report (the JSON of bench/out/<dataset>.json) as a Markdown fragment."""
from __future__ import annotations

from typing import Mapping


def machine_line(m) -> str:
    """The ``- machine:`` line of a BENCHMARKS.md block for a report's ``machine`` field."""
    if not isinstance(m, dict):
        return f"- machine: {m}"
    cpu = f"; CPU {m['cpu']}" if m.get("cpu") else ""
    capped = (f"; **capped** by `{m['capped']}`: the figures stand for a host with those instructions only"
              if m.get("capped") else "")
    return f"- machine: `{m['uname']}`, {m['nproc']} CPUs{cpu}{capped}"


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def _fmt(key: str, v) -> str:
    if v is None:
        return "-"
    if key in ("mrr", "rouge_l"):
        return f"{v:.3f}"
    return _pct(v)


def _ms(v) -> str:
    if v is None:
        return "-"
    return f"{v:.1f}" if v < 10 else f"{v:.0f}"


def render(report: Mapping) -> str:
    """Markdown: heading, command, date, machine, one table row per (setting, config).

    Rates are percentages; MRR and ROUGE-L are in [0, 1]; latency is the query's own wall
    time (``trace.timings_ms.total``), p50/p95 in milliseconds.
    """
    cols = [tuple(c) for c in report["columns"]]
    m = report["machine"]
    lines = [f"### {report['dataset']}", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(m),
             f"- index: {'reused' if report['index'].get('reused') else 'built'}"
             + (f" in {report['index']['build_s']} s" if report["index"].get("build_s") else "")
             + f"; questions per setting: {report['questions']}", ""]
    head = ["setting", "configuration", *[h for _, h in cols], "p50 ms", "p95 ms", "LLM calls"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for setting, per_cfg in report["results"].items():
        for cfg, agg in per_cfg.items():
            if "error" in agg:
                lines.append(f"| {setting} | {cfg} | " + " | ".join(["error"] * (len(head) - 2)) + " |")
                continue
            lat = agg.get("latency") or {}
            calls = agg.get("llm_calls")
            row = [setting, cfg, *[_fmt(k, agg.get(k)) for k, _ in cols],
                   _ms(lat.get("p50_ms")), _ms(lat.get("p95_ms")),
                   "-" if calls is None else f"{calls:.2f}"]
            lines.append("| " + " | ".join(row) + " |")
    for label, figs in report.get("reference", []):
        row = ["reference", label, *[_fmt(k, figs.get(k)) for k, _ in cols], "", "", ""]
        lines.append("| " + " | ".join(row) + " |")
    dropped = report.get("dropped_flags") or {}
    if any(dropped.values()):
        lines += ["", "Flags the CLI did not support (dropped): "
                  + "; ".join(f"{c}: {' '.join(f)}" for c, f in dropped.items() if f)]
    return "\n".join(lines) + "\n"
