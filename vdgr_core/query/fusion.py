"""Fusion of ranked lists, keeping which route found each item.

- :func:`convex` fuses route 1's BM25 and dense lists by a convex combination of their
  min-max normalized scores. RRF only sees ranks, so a BM25 list with one clear winner and a
  dense list of near-equal cosines count alike; the score-aware combination keeps how decisive
  each list is (Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval",
  ACM TOIS 2023, found it more effective than RRF). Equal weights: no learned alpha.
- :func:`anchored_rrf` adds the TOC and graph routes to route 1. Both are built from the same
  query vector as route 1's dense half (the TOC route ranks contents by cosine under chosen
  directories, the graph route seeds PPR with the dense top contents), so their agreement with
  route 1 is not independent evidence, and with plain RRF it reordered route 1's top (R@1 on
  E-Manual S10 fell from 76 to 62). Secondary routes therefore only score rows route 1 did not
  return; those new rows take their weighted RRF place among route 1's rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence


@dataclass
class Ranked:
    """A ranked list of content rows from one route: ``hits`` are (row, score), best first."""

    route: str
    hits: list[tuple[int, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Fused:
    row: int
    score: float
    routes: tuple[str, ...]


def rrf(lists: Sequence[Ranked], rrf_k: int, id_rank=None, limit: int | None = None,
        weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Fuse ranked lists: score(row) = sum over lists of 1 / (rrf_k + rank), rank from 1.

    Parameters
    ----------
    lists : sequence of Ranked
    rrf_k : int
        The RRF constant (60 in the original paper).
    id_rank : array, optional
        Tie-break rank per row (by id); row number when None.
    limit : int, optional
        Keep at most this many results.
    weights : mapping of route name to weight, optional
        Weighted RRF: a list's contributions are multiplied by the weight of its route
        (1.0 when absent), so a less reliable route can add candidates without outvoting
        a reliable one.

    Returns
    -------
    list of Fused
        Deduplicated on row, best first; ``routes`` lists every route that found the row, in
        the order the lists were given.
    """
    scores: dict[int, float] = {}
    routes: dict[int, list[str]] = {}
    for lst in lists:
        seen: set[int] = set()
        w = 1.0 if weights is None else float(weights.get(lst.route, 1.0))
        for rank, (row, _score) in enumerate(lst.hits, 1):
            if row in seen:
                continue
            seen.add(row)
            scores[row] = scores.get(row, 0.0) + w / (rrf_k + rank)
            _note_route(routes, row, lst.route)
    return _ordered(scores, routes, id_rank, limit)


def _note_route(routes: dict[int, list[str]], row: int, route: str) -> None:
    """Record that ``route`` (possibly "a+b") found ``row``, keeping first-seen order."""
    found = routes.setdefault(row, [])
    for name in route.split("+"):
        if name not in found:
            found.append(name)


def _ordered(scores: dict[int, float], routes: dict[int, list[str]], id_rank, limit) -> list[Fused]:
    """Rows best first, ties broken by id rank (row number when None), cut to ``limit``."""
    tie = (lambda r: int(id_rank[r])) if id_rank is not None else (lambda r: r)
    order = sorted(scores, key=lambda r: (-scores[r], tie(r)))
    if limit is not None:
        order = order[:limit]
    return [Fused(r, scores[r], tuple(routes[r])) for r in order]


def convex(lists: Sequence[Ranked], id_rank=None, limit: int | None = None,
           weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Convex combination of min-max normalized scores.

    Each list's scores are mapped to [0, 1] by its own minimum and maximum (a list whose
    scores are all equal maps to 1); a row a list did not return counts 0 there (its score
    would be at most that list's minimum). ``score(row) = sum_l w_l * norm_l(row)`` with the
    weights of the lists' routes normalized to sum 1 (equal by default). A row repeated in one
    list counts once, with its best score.
    """
    raw = {lst.route: 1.0 if weights is None else float(weights.get(lst.route, 1.0)) for lst in lists}
    total = sum(raw[lst.route] for lst in lists if lst.hits) or 1.0
    scores: dict[int, float] = {}
    routes: dict[int, list[str]] = {}
    for lst in lists:
        if not lst.hits:
            continue
        vals = [s for _, s in lst.hits]
        lo, hi = min(vals), max(vals)
        w = raw[lst.route] / total
        seen: set[int] = set()
        for row, score in lst.hits:
            if row in seen:
                continue
            seen.add(row)
            norm = (score - lo) / (hi - lo) if hi > lo else 1.0
            scores[row] = scores.get(row, 0.0) + w * norm
            _note_route(routes, row, lst.route)
    return _ordered(scores, routes, id_rank, limit)


def anchored_rrf(primary: Sequence[Ranked], secondary: Sequence[Ranked], rrf_k: int, id_rank=None,
                 limit: int | None = None, weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Weighted RRF in which ``secondary`` lists only add rows ``primary`` did not return.

    A row of any primary list scores its (weighted) RRF over the primary lists only, so the
    secondary routes never reorder the primary ranking; a row found only by secondary lists
    scores its weighted RRF over them and is placed among the primary rows by that score.
    ``routes`` still names every route that found a row. Without primary lists this is
    :func:`rrf` over the secondary ones.
    """
    if not any(lst.hits for lst in primary):
        return rrf(list(secondary), rrf_k, id_rank, limit, weights)
    base = {f.row: f for f in rrf(list(primary), rrf_k, id_rank, None, weights)}
    extra = rrf(list(secondary), rrf_k, id_rank, None, weights)
    out = dict(base)
    for f in extra:
        if f.row in base:
            b = base[f.row]
            out[f.row] = Fused(b.row, b.score, b.routes + tuple(x for x in f.routes if x not in b.routes))
        else:
            out[f.row] = f
    tie = (lambda r: int(id_rank[r])) if id_rank is not None else (lambda r: r)
    order = sorted(out, key=lambda r: (-out[r].score, tie(r)))
    if limit is not None:
        order = order[:limit]
    return [out[r] for r in order]


def merge_fused(runs: Sequence[Sequence[Fused]], rrf_k: int, id_rank=None,
                weights: Sequence[float] | None = None) -> list[Fused]:
    """RRF over already-fused runs (e.g. before and after a refined query), uniting routes.

    ``weights`` (one per run, default 1.0) lets a run count less: a refined query searches
    for what the first evidence lacked, so it should add candidates, not overturn the
    ranking of the question as asked.
    """
    scores: dict[int, float] = {}
    routes: dict[int, list[str]] = {}
    for n, run in enumerate(runs):
        w = 1.0 if weights is None else float(weights[n])
        for rank, f in enumerate(run, 1):
            scores[f.row] = scores.get(f.row, 0.0) + w / (rrf_k + rank)
            r = routes.setdefault(f.row, [])
            r.extend(x for x in f.routes if x not in r)
    tie = (lambda r: int(id_rank[r])) if id_rank is not None else (lambda r: r)
    order = sorted(scores, key=lambda r: (-scores[r], tie(r)))
    return [Fused(r, scores[r], tuple(routes[r])) for r in order]


PREFER_FACTOR = 2.0


def prefer_rows(fused: Sequence[Fused], preferred, factor: float = PREFER_FACTOR) -> list[Fused]:
    """Multiply the score of rows where ``preferred[row]`` is True by ``factor`` and re-sort
    (stable: equal scores keep their order). Used for a collection the question names."""
    out = [Fused(f.row, f.score * factor, f.routes) if preferred[f.row] else f for f in fused]
    order = sorted(range(len(out)), key=lambda i: (-out[i].score, i))
    return [out[i] for i in order]
