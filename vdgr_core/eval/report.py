"""Score one query result against its gold record, and aggregate scores into a report.

A gold record is a dict with any of these keys (each enables its metrics):

``paths``
    list of gold section paths (lists of titles): ``hit@k``/``mrr`` on distinct sections
    (tail match) and ``subtree_hit@k`` (the chunk sits in or below the gold section).
``sources``
    list of corpus-relative files (passages, documents): ``src_recall@k`` (share of them
    among the first k distinct files), ``src_hit@k`` (any of them), ``src_mrr``.
``domain``
    ``d_match`` (top routed domain) and ``wrong_product`` (top-1 evidence elsewhere).
``collection``
    ``c_match`` (with ``domain``).
``value``
    ``value_hit@k`` (the value occurs in the text of the first k evidence items) and
    ``answer_has_value``.
``answer``
    ``rouge_l`` of the system answer against this reference.
``answers``
    ``answer_contains`` (any accepted answer occurs in the system answer).
``forbidden_sources``
    ``acl_leak``: 1.0 when any evidence item comes from one of these files (an access
    test: the asker lacks the group the files need).
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

from vdgr_core.eval.metrics import (
    c_match,
    d_match,
    hit_at_k,
    latency_summary,
    normalize_title,
    path_matches,
    recall_at_k,
    reciprocal_rank,
    source_matches,
    wrong_product,
)
from vdgr_core.eval.rouge import rouge_l_f1

DEFAULT_KS = (1, 3, 5, 10)


def _norm_text(s: str) -> str:
    return " ".join(str(s).split()).casefold()


def _section_keys(evidence: Sequence[Mapping], gold_paths, mode: str) -> list:
    keys = []
    for ev in evidence:
        path = list(ev.get("path") or [])
        hit = next((i for i, g in enumerate(gold_paths) if path_matches(path, g, mode)), None)
        keys.append(("gold", hit) if hit is not None else tuple(normalize_title(t) for t in path))
    return keys


def _source_keys(evidence: Sequence[Mapping], gold_sources) -> list:
    keys = []
    for ev in evidence:
        src = str(ev.get("source", ""))
        hit = next((g for g in gold_sources if source_matches(src, g)), None)
        keys.append(("gold", hit) if hit is not None else src)
    return keys


def score_result(result: Optional[Mapping], gold: Mapping, ks: Sequence[int] = DEFAULT_KS) -> dict:
    """Per-question metric values.

    Parameters
    ----------
    result:
        One result object of ``vdgr query`` (None when the query produced none: every
        metric is then 0 and ``missing`` is 1).
    gold:
        The gold record (see the module docstring).
    ks:
        Cut-offs for the @k metrics.

    Returns
    -------
    dict
        Metric name -> float (or None where undefined), plus ``latency_ms`` and
        ``llm_calls`` when the trace has them.
    """
    missing = result is None
    result = result or {}
    ev = list(result.get("evidence") or [])
    out: dict = {"missing": 1.0 if missing else 0.0}
    if gold.get("paths"):
        gp = [list(p) for p in gold["paths"]]
        tail = _section_keys(ev, gp, "tail")
        sub = _section_keys(ev, gp, "subtree")
        gold_keys = [("gold", i) for i in range(len(gp))]
        for k in ks:
            out[f"hit@{k}"] = hit_at_k(tail, gold_keys, k)
            out[f"subtree_hit@{k}"] = hit_at_k(sub, gold_keys, k)
        out["mrr"] = reciprocal_rank(tail, gold_keys)
    if gold.get("sources"):
        keys = _source_keys(ev, gold["sources"])
        gold_keys = [("gold", g) for g in gold["sources"]]
        for k in ks:
            out[f"src_recall@{k}"] = recall_at_k(keys, gold_keys, k)
            out[f"src_hit@{k}"] = hit_at_k(keys, gold_keys, k)
        out["src_mrr"] = reciprocal_rank(keys, gold_keys)
    if gold.get("forbidden_sources"):
        out["acl_leak"] = 1.0 if any(source_matches(str(e.get("source", "")), f)
                                     for e in ev for f in gold["forbidden_sources"]) else 0.0
    if gold.get("domain"):
        out["d_match"] = d_match(result.get("routing") or [], gold["domain"])
        out["wrong_product"] = wrong_product(ev, gold["domain"])
        if gold.get("collection"):
            out["c_match"] = c_match(result, gold["domain"], gold["collection"])
    answer = str(result.get("answer") or "")
    if gold.get("value"):
        v = _norm_text(gold["value"])
        for k in ks:
            out[f"value_hit@{k}"] = 1.0 if any(v in _norm_text(e.get("text", "")) for e in ev[:k]) else 0.0
        out["answer_has_value"] = 1.0 if v in _norm_text(answer) else 0.0
    if gold.get("answer"):
        out["rouge_l"] = rouge_l_f1(answer, gold["answer"])
    if gold.get("answers"):
        a = _norm_text(answer)
        out["answer_contains"] = 1.0 if any(_norm_text(x) in a for x in gold["answers"] if x) else 0.0
    trace = result.get("trace") or {}
    total = (trace.get("timings_ms") or {}).get("total")
    out["latency_ms"] = float(total) if total is not None else None
    out["llm_calls"] = float(trace["llm_calls"]) if trace.get("llm_calls") is not None else None
    return out


def aggregate(scores: Sequence[Mapping]) -> dict:
    """Mean of every metric over questions (None values skipped), plus latency and counts.

    Parameters
    ----------
    scores:
        Outputs of :func:`score_result`.

    Returns
    -------
    dict
        ``{"n": ..., "<metric>": mean rounded to 4 places, ..., "latency": {...}}``;
        metric keys are sorted, so equal inputs give byte-identical JSON.
    """
    keys = sorted({k for s in scores for k in s} - {"latency_ms"})
    out: dict = {"n": len(scores)}
    for k in keys:
        vals = [s[k] for s in scores if s.get(k) is not None]
        out[k] = round(sum(vals) / len(vals), 4) if vals else None
    out["latency"] = latency_summary(s.get("latency_ms") for s in scores)
    return out
