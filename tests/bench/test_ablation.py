"""bench.quality.ablation's public helpers: precision variants, the embedding header, cell formatting."""
from __future__ import annotations

from bench.quality.ablation import SETS, embedding_lines, fmt_metric, with_precision


def test_with_precision_builds_in_its_own_folder():
    es = with_precision(SETS["s10_long"], "fp32")
    assert es.work == "emanual_long_fp32"
    assert es.index_args[-2:] == ("--embedding-precision", "fp32")
    assert es.index_args[:-2] == SETS["s10_long"].index_args


def test_embedding_line_names_the_precision_once_when_sets_agree():
    one = {"sets": {"a": {"embedding_model": "minilm:m:bf16:packed1"},
                    "b": {"embedding_model": "minilm:m:bf16:packed1"}}}
    assert embedding_lines(one) == ["- embedding model id of the indexes (manifest; "
                                    "`minilm:<model>:<precision>:<call scheme>`): `minilm:m:bf16:packed1` (all sets)"]
    two = {"sets": {"a": {"embedding_model": "minilm:m:bf16:packed1"},
                    "b": {"embedding_model": "minilm:m:fp32:packed1"}}}
    assert "a `minilm:m:bf16:packed1`; b `minilm:m:fp32:packed1`" in embedding_lines(two)[0]
    assert embedding_lines({"sets": {"a": {}}}) == []


def test_fmt_metric():
    assert fmt_metric("hit@5", 0.9612) == "96.1"
    assert fmt_metric("mrr", 0.5) == "0.500"
    assert fmt_metric("hit@5", None) == "-"
