"""bench/quality/fusion_study.py: the compared methods on hand-made route lists (no index needed)."""
from types import SimpleNamespace

import numpy as np

from bench.quality import fusion_study as fs
from vdgr_core.query.fusion import SectionHit, SectionList


def _sl(route, pairs):
    return SectionList(route, [SectionHit(s, v, (10 * s,), (route,)) for s, v in pairs])


KB = SimpleNamespace(data=SimpleNamespace(sections=SimpleNamespace(id_rank=np.arange(20))))
# BM25's decisive first hit (1) is missing from dense's flat list
LISTS = {"bm25": _sl("bm25", [(1, 15.7), (2, 11.5), (3, 8.5), (4, 8.4), (5, 8.3), (6, 8.0), (7, 7.9)]),
         "dense": _sl("dense", [(6, 0.57), (7, 0.54), (2, 0.47), (8, 0.47), (9, 0.46), (10, 0.46)])}


def test_the_floor_z_score_keeps_the_decisive_hit_the_mean_z_score_lost():
    new = fs._fuse({"bm25": 1.0, "dense": 1.0}, "zscore")(LISTS, KB, None)
    old = fs._zscore_from_mean({"bm25": 1.0, "dense": 1.0})(LISTS, KB, None)
    assert new[0].section == 1
    assert old[0].section != 1           # the earlier method: dense outvoted the BM25 hit


def test_methods_name_every_compared_family():
    names = set(fs.methods())
    assert {"bm25", "dense", "graph", "toc", "bm25+dense rrf", "bm25+dense convex", "bm25+dense zscore",
            "bm25+dense zscore from the mean, clipped (before)"} <= names
    assert any(n.startswith("route 1 then graph walk, 5 seeds") for n in names)
    assert any(n.startswith("bm25+dense+graph rrf") for n in names)
