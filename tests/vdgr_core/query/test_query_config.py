"""QueryConfig: flat fields (JSON, flags) unchanged; typed slices for each component."""
import argparse
import json

import pytest

from schemas.config import (AnnSettings, AnswerSettings, ExpandSettings, FusionSettings, GraphSettings,
                            GuardrailConfig, QueryConfig, QuerySlices, RetrieveSettings, RoutingSettings,
                            TocSettings, slice_of)

# QueryConfig().model_dump() before the slices existed (graph_m included: it was a field)
BEFORE = {
    "k": 10, "routes": ["hybrid", "graph"], "composition": "parallel", "rrf_k": 60, "hybrid_fusion": "zscore",
    "route_fusion": "rrf", "route_weights": {"bm25": 1.0, "dense": 1.0, "hybrid": 1.0, "toc": 0.5, "graph": 0.1},
    "toc_coarse_l": 50, "toc_fine": 5, "toc_max_contents": 40, "graph_n": 5, "graph_m": 200, "graph_beta": 0.05,
    "graph_keep_head": True, "graph_synonym_min": 0.95, "ann_nprobes": 64, "ann_refine_factor": 16, "ann_ef": None,
    "exact_max_rows": 200000, "backtrack": False, "backtrack_depth": 3, "reflection": False,
    "reflection_rounds": 3, "reflection_bridge": False, "routing": True, "routing_threshold": 0.5,
    "max_domains": 3, "reranker": {"kind": "none", "model_path": None, "top_n": 30}, "llm": None,
    "embedding": {"kind": "minilm", "model_path": None, "base_url": None, "model": None, "api_key": "not-needed",
                  "dim": 384, "batch_size": 64, "precision": "auto"},
    "guardrails": {"deny_list": [], "screen_answers": True, "min_support": 0.5,
                   "phone_regions": ["US", "GB", "DE", "FR", "RU"]},
    "min_confidence": 0.4, "context_budget_tokens": 600,
}


def test_json_written_before_the_slices_loads_to_the_same_config():
    loaded = QueryConfig.model_validate_json(json.dumps(BEFORE))
    assert loaded == QueryConfig()
    now = json.loads(loaded.model_dump_json())
    # graph_m retired, still read; named_first (on by default), graph_keep_seeds (off),
    # copies_last and recall_tail added since
    assert now == {**{k: v for k, v in BEFORE.items() if k != "graph_m"}, "named_first": True,
                   "graph_keep_seeds": False, "copies_last": QueryConfig().copies_last,
                   "recall_tail": QueryConfig().recall_tail, "entry_first": QueryConfig().entry_first}


def test_non_default_json_reaches_each_slice():
    cfg = QueryConfig.model_validate({**BEFORE, "k": 7, "routes": ["bm25", "toc"], "graph_n": 9, "graph_beta": 0.2,
                                      "ann_nprobes": 8, "toc_fine": 2, "reflection": True, "reflection_rounds": 2,
                                      "routing_threshold": 0.3, "hybrid_fusion": "rrf", "min_confidence": 0.1,
                                      "guardrails": {"phone_regions": ["DE"], "min_support": 0.7}})
    s = cfg.slices
    assert (s.retrieve.k, s.retrieve.routes) == (7, ("bm25", "toc"))
    assert s.graph == GraphSettings(n=9, beta=0.2, keep_head=True, synonym_min=0.95, keep_seeds=False)
    assert s.ann.nprobes == 8 and s.toc.fine == 2 and s.expand.rounds == 2
    assert s.routing == RoutingSettings(enabled=True, threshold=0.3, max_domains=3)
    assert s.fusion.hybrid_fusion == "rrf" and s.fusion.weights() == cfg.route_weights
    assert s.answer == AnswerSettings(min_confidence=0.1, context_budget_tokens=600, screen=True, min_support=0.7,
                                      phone_regions=("DE",))


def test_model_copy_updates_are_seen_by_the_slices():
    cfg = QueryConfig().model_copy(update={"graph_beta": 0.5, "exact_max_rows": 0})
    assert cfg.slices.graph.beta == 0.5 and cfg.slices.ann.exact_max_rows == 0
    assert slice_of(cfg, GraphSettings) is not None and slice_of(cfg.slices.ann, AnnSettings) == cfg.slices.ann


@pytest.mark.parametrize("bad", [lambda: GraphSettings(n=0), lambda: GraphSettings(beta=2.0),
                                 lambda: AnnSettings(nprobes=0), lambda: TocSettings(fine=0),
                                 lambda: ExpandSettings(backtrack_depth=11), lambda: RoutingSettings(threshold=-1),
                                 lambda: FusionSettings(hybrid_fusion="max"), lambda: AnswerSettings(min_support=2)])
def test_slices_are_validated_at_construction(bad):
    with pytest.raises(ValueError):
        bad()


def test_slices_are_frozen():
    with pytest.raises(Exception):
        QueryConfig().slices.graph.n = 3


def test_cli_flags_give_the_same_config():
    from runners.query_cli import add_model_options, query_config

    class Manifest:
        embedding_model, dim = "hashing", 64

    p = argparse.ArgumentParser()
    add_model_options(p)
    args = p.parse_args(["--k", "4", "--routes", "bm25,toc,graph", "--composition", "sequential", "--backtrack",
                         "--reflection", "--no-routing", "--reranker", "section"])
    cfg = query_config(args, Manifest())
    assert cfg.model_dump(exclude={"embedding", "reranker"}) == QueryConfig(
        k=4, routes=("bm25", "toc", "graph"), composition="sequential", backtrack=True, reflection=True,
        routing=False).model_dump(exclude={"embedding", "reranker"})
    assert cfg.reranker.kind == "section" and cfg.slices.routing.enabled is False
    assert QueryConfig(guardrails=GuardrailConfig(screen_answers=False)).slices.answer.screen is False


def test_slice_defaults_equal_the_config_defaults():
    """The slices repeat QueryConfig's defaults (they are also built on their own, by benches
    and tests): the two must not drift apart."""
    assert QueryConfig().slices == QuerySlices(RetrieveSettings(), RoutingSettings(), FusionSettings(),
                                               GraphSettings(), AnnSettings(), TocSettings(), ExpandSettings(),
                                               AnswerSettings())
