"""Reciprocal rank fusion of ranked lists, keeping which route found each item."""
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
            r = routes.setdefault(row, [])
            for name in lst.route.split("+"):
                if name not in r:
                    r.append(name)
    tie = (lambda r: int(id_rank[r])) if id_rank is not None else (lambda r: r)
    order = sorted(scores, key=lambda r: (-scores[r], tie(r)))
    if limit is not None:
        order = order[:limit]
    return [Fused(r, scores[r], tuple(routes[r])) for r in order]


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
