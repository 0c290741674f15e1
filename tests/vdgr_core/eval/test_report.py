"""Tests of per-question scoring and aggregation."""
import json

import pytest

from vdgr_core.eval.report import aggregate, score_result


def _ev(domain, path, source="x.md", text=""):
    return {"chunk_id": "c", "domain": domain, "version": "", "source": source, "path": path,
            "title": path[-1], "text": text, "score": 1.0, "routes": ["hybrid"]}


def _result(evidence, routing=None, answer="", total=12.0, calls=0):
    return {"id": "q", "question": "?", "answer": answer, "routing": routing or [],
            "evidence": evidence, "trace": {"llm_calls": calls, "timings_ms": {"total": total}, "steps": []}}


def test_section_scores_dedupe_chunks_of_one_section():
    gold = {"paths": [["Apps", "Camera", "Camera settings"]], "domain": "S10", "answer": "tap settings"}
    ev = [_ev("S9", ["S9", "Apps", "Camera", "Camera settings"]),
          _ev("S10", ["S10", "Apps", "Gallery"]),
          _ev("S10", ["S10", "Apps", "Gallery"]),
          _ev("S10", ["S10", "Apps", "Camera", "Camera settings", "Video"])]
    s = score_result(_result(ev, [{"domain": "S10", "confidence": 1}], answer="Tap Settings."), gold)
    assert s["hit@1"] == 1.0                # tail match ignores the domain, S9 path counts
    assert s["wrong_product"] == 1.0 and s["d_match"] == 1.0
    assert s["rouge_l"] == 1.0 and s["latency_ms"] == 12.0 and s["missing"] == 0.0
    gold2 = {"paths": [["Camera", "Camera settings", "Video"]]}
    s2 = score_result(_result(ev), gold2)
    assert s2["hit@1"] == 0.0 and s2["hit@3"] == 1.0 and s2["mrr"] == pytest.approx(1 / 3)
    assert s2["subtree_hit@3"] == 1.0


def test_source_recall_and_value():
    gold = {"sources": ["m/passages/p0001-a.md", "m/passages/p0002-b.md"], "value": "6.5 %",
            "answers": ["Stanley Hall"]}
    ev = [_ev("m", ["m", "A"], "/c/m/passages/p0001-a.md", "rate is 6.5  %"),
          _ev("m", ["m", "A"], "/c/m/passages/p0001-a.md"),
          _ev("m", ["m", "C"], "/c/m/passages/p0003-c.md"),
          _ev("m", ["m", "B"], "/c/m/passages/p0002-b.md")]
    s = score_result(_result(ev, answer="G. Stanley Hall"), gold, ks=(1, 2, 5))
    assert s["src_recall@1"] == 0.5 and s["src_recall@2"] == 0.5 and s["src_recall@5"] == 1.0
    assert s["value_hit@1"] == 1.0 and s["answer_has_value"] == 0.0 and s["answer_contains"] == 1.0


def test_missing_result_scores_zero():
    s = score_result(None, {"paths": [["A"]], "domain": "d"}, ks=(1,))
    assert s["missing"] == 1.0 and s["hit@1"] == 0.0 and s["wrong_product"] is None
    assert s["latency_ms"] is None


def test_aggregate_is_deterministic_and_skips_none():
    scores = [{"hit@1": 1.0, "wrong_product": None, "latency_ms": 10.0},
              {"hit@1": 0.0, "wrong_product": 1.0, "latency_ms": 30.0}]
    a = aggregate(scores)
    assert a["n"] == 2 and a["hit@1"] == 0.5 and a["wrong_product"] == 1.0
    assert a["latency"]["p50_ms"] == 20.0
    assert json.dumps(a, sort_keys=True) == json.dumps(aggregate(list(scores)), sort_keys=True)


def test_acl_leak():
    gold = {"forbidden_sources": ["net/internal/secret.md"]}
    ev = [_ev("net", ["net", "X"], "/c/net/internal/secret.md")]
    assert score_result(_result(ev), gold)["acl_leak"] == 1.0
    assert score_result(_result([]), gold)["acl_leak"] == 0.0
