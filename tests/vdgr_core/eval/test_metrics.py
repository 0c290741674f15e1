"""Unit tests of vdgr_core.eval.metrics."""
import math

import pytest

from vdgr_core.eval.metrics import (
    c_match, collection_of, d_match, distinct, hit_at_k, latency_summary, mrr, path_matches,
    percentile, recall_at_k, reciprocal_rank, source_matches, wrong_product,
)


def test_recall_counts_distinct_units():
    ranked = ["x", "x", "x", "a", "b"]
    assert recall_at_k(ranked, {"a"}, 1) == 0.0
    assert recall_at_k(ranked, {"a"}, 2) == 1.0
    assert recall_at_k(ranked, {"a", "b", "c"}, 10) == pytest.approx(2 / 3)


def test_recall_rejects_empty_gold_and_bad_k():
    with pytest.raises(ValueError):
        recall_at_k(["a"], [], 1)
    with pytest.raises(ValueError):
        recall_at_k(["a"], ["a"], 0)


def test_hit_and_rr_and_mrr():
    assert hit_at_k(["b", "a"], ["a"], 1) == 0.0
    assert hit_at_k(["b", "a"], ["a"], 2) == 1.0
    assert reciprocal_rank(["b", "b", "c", "a"], ["a"]) == pytest.approx(1 / 3)
    assert reciprocal_rank([], ["a"]) == 0.0
    assert mrr([1.0, 0.5, 0.0]) == pytest.approx(0.5)
    assert mrr([]) == 0.0
    assert distinct([3, 1, 3]) == [3, 1]


def test_path_tail_match_is_case_and_space_insensitive():
    gold = "Apps>Samsung apps>Camera>Camera settings".split(">")
    ev = ["Galaxy_S10", "apps", "Samsung  Apps", "CAMERA", " camera settings "]
    assert path_matches(ev, gold)
    assert not path_matches(ev + ["Video"], gold)                 # deeper section: no tail hit
    assert path_matches(ev + ["Video"], gold, mode="subtree")
    assert not path_matches(["Camera settings"], gold)            # shorter than gold
    assert not path_matches(["X", "Apps", "Camera", "Camera settings"], gold)
    with pytest.raises(ValueError):
        path_matches(ev, gold, mode="fuzzy")


def test_source_matches_tail_components():
    assert source_matches("file:///c/corpus/zhk_a/apartments/Pricing.txt", "zhk_a/apartments/Pricing.txt")
    assert source_matches("zhk_a\\apartments\\Pricing.txt", "zhk_a/apartments/Pricing.txt")
    assert not source_matches("zhk_b/apartments/Pricing.txt", "zhk_a/apartments/Pricing.txt")


def test_routing_matches():
    routing = [{"domain": "zhk_a", "confidence": 0.9}, {"domain": "zhk_b", "confidence": 0.1}]
    assert d_match(routing, "zhk_a") == 1.0
    assert d_match(routing, "zhk_b") == 0.0
    assert d_match([], "zhk_a") == 0.0
    ev = [{"domain": "zhk_a", "source": "/w/corpus/zhk_a/apartments/P.txt"}]
    assert collection_of(ev[0]) == "apartments"
    assert c_match({"routing": routing, "evidence": ev}, "zhk_a", "apartments") == 1.0
    assert c_match({"routing": routing, "evidence": ev}, "zhk_a", "infrastructure") == 0.0
    explicit = [{"domain": "zhk_a", "collection": "Infrastructure"}]
    assert c_match({"routing": explicit, "evidence": ev}, "zhk_a", "infrastructure") == 1.0
    assert c_match({"routing": routing[1:], "evidence": ev}, "zhk_a", "apartments") == 0.0


def test_undecided_routing_gives_none():
    flat = [{"domain": "a", "confidence": 0.5}, {"domain": "b", "confidence": 0.5}]
    assert d_match(flat, "a") is None
    assert c_match({"routing": flat, "evidence": []}, "a", "x") is None
    assert d_match([{"domain": "a", "confidence": 1.0}], "a") == 1.0


def test_collection_of_file_directly_under_domain_is_none():
    assert collection_of({"domain": "d", "source": "corpus/d/readme.md"}) is None


def test_wrong_product():
    assert wrong_product([{"domain": "Galaxy_S9"}, {"domain": "Galaxy_S10"}], "Galaxy_S10") == 1.0
    assert wrong_product([{"domain": "Galaxy_S10"}], "Galaxy_S10") == 0.0
    assert wrong_product([], "Galaxy_S10") is None


def test_percentile_and_latency():
    assert percentile([5], 95) == 5
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert math.isnan(percentile([], 50))
    s = latency_summary([10, 20, None, 30])
    assert s == {"p50_ms": 20.0, "p95_ms": 29.0, "mean_ms": 20.0, "n": 3}
    assert latency_summary([])["n"] == 0
