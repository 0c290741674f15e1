"""The benchmark data sets and the ablation configurations run on each.

A data set names its converter, the question settings it writes
(``questions_<setting>.jsonl`` in its work folder), the @k cut-offs, the columns of its
Markdown table, and published reference figures to print next to ours.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bench.prepare import convert_dcd, convert_emanual, convert_musique

# (name, flags of `vdgr query`). Each row up to "all components" adds one component to the
# previous one; "default" is `vdgr query` without flags (the defaults chosen by bench/quality/ablation.py).
_OFF = ["--no-backtrack", "--no-reflection", "--no-routing"]
_ALL = ["--routes", "hybrid,toc,graph"]
CONFIGS: list[tuple[str, list[str]]] = [
    ("bm25", ["--routes", "bm25", *_OFF]),
    ("dense", ["--routes", "dense", *_OFF]),
    ("hybrid (route 1)", ["--routes", "hybrid", *_OFF]),
    ("+ toc", ["--routes", "hybrid,toc", *_OFF]),
    ("+ graph", [*_ALL, *_OFF]),
    ("+ backtracking", [*_ALL, "--backtrack", "--no-reflection", "--no-routing"]),
    ("+ reflection", [*_ALL, "--backtrack", "--reflection", "--no-routing"]),
    ("+ routing (all components)", [*_ALL, "--backtrack", "--reflection"]),
    ("default", []),
]
QUICK_CONFIGS = ("bm25", "hybrid (route 1)", "default")


@dataclass(frozen=True)
class Dataset:
    """One benchmark data set."""

    name: str
    convert: Callable[[Path], dict]
    settings: tuple[str, ...]
    ks: tuple[int, ...]
    columns: tuple[tuple[str, str], ...]          # (metric key, column header)
    reference: tuple[tuple[str, dict], ...] = field(default=())


_SECTION_COLS = (("hit@1", "R@1"), ("hit@3", "R@3"), ("hit@5", "R@5"), ("hit@10", "R@10"),
                 ("mrr", "MRR"), ("wrong_product", "wrong product"), ("d_match", "D-match"),
                 ("rouge_l", "ROUGE-L"))

DATASETS: dict[str, Dataset] = {
    "emanual": Dataset(
        "emanual", lambda out: convert_emanual.convert(out, include_others=False), ("s10",),
        (1, 3, 5, 10), _SECTION_COLS,
        (("BM25 (rank_bm25, one unit per section; shared/bench/README.md)",
          {"hit@1": 0.72, "hit@3": 0.84, "hit@5": 0.90, "hit@10": 0.94}),)),
    "emanual_all": Dataset(
        "emanual_all", lambda out: convert_emanual.convert(out, include_others=True),
        ("scoped", "named", "unscoped"), (1, 3, 5, 10), _SECTION_COLS,
        (("BM25 unscoped, all 33 manuals (shared/bench/README.md)",
          {"hit@1": 0.06, "hit@3": 0.14, "hit@5": 0.22, "hit@10": 0.40, "wrong_product": 0.94}),)),
    "musique": Dataset(
        "musique", convert_musique.convert, ("musique",), (1, 2, 5, 10),
        (("src_recall@2", "R@2"), ("src_recall@5", "R@5"), ("src_recall@10", "R@10"),
         ("answer_contains", "answer contains gold")),
        (("BM25, these 100 questions (shared/bench/README.md)", {"src_recall@2": 0.348, "src_recall@5": 0.459}),
         ("HippoRAG 2, full 1,000-question set (arXiv 2502.14802 Table 9)",
          {"src_recall@2": 0.561, "src_recall@5": 0.747}))),
    "dcd": Dataset(
        "dcd", convert_dcd.convert, ("dcd", "natural"), (1, 3, 5, 10),
        (("d_match", "D-match"), ("c_match", "C-match"), ("src_hit@1", "doc@1"), ("src_hit@5", "doc@5"),
         ("value_hit@1", "value@1"), ("value_hit@5", "value@5"), ("answer_has_value", "answer has value"),
         ("wrong_product", "wrong complex"))),
}
