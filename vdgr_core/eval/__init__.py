"""Evaluation metrics for retrieval and answers (pure functions, no index access).

Used by ``bench/`` to score the JSON results of ``vdgr query`` against gold records.
"""
from vdgr_core.eval.metrics import (
    c_match,
    d_match,
    distinct,
    hit_at_k,
    latency_summary,
    mrr,
    normalize_title,
    path_matches,
    percentile,
    recall_at_k,
    reciprocal_rank,
    source_matches,
    wrong_product,
)
from vdgr_core.eval.report import aggregate, score_result
from vdgr_core.eval.rouge import rouge_l_f1, tokenize

__all__ = [
    "aggregate", "c_match", "d_match", "distinct", "hit_at_k", "latency_summary", "mrr",
    "normalize_title", "path_matches", "percentile", "recall_at_k", "reciprocal_rank",
    "rouge_l_f1", "score_result", "source_matches", "tokenize", "wrong_product",
]
