"""Retrieval, routing and latency metrics over ``vdgr query`` result objects.

Ranked lists are lists of hashable *unit keys* (a section, a passage, a document); a
unit that appears several times (several chunks of one section) counts once, at its
first position. Result objects follow the Query contract of DESIGN.md.
"""
from __future__ import annotations

import math
from typing import Hashable, Iterable, Mapping, Optional, Sequence


def distinct(seq: Iterable[Hashable]) -> list:
    """Items of ``seq`` in order, each kept at its first occurrence.

    Examples
    --------
    >>> distinct(["a", "b", "a", "c"])
    ['a', 'b', 'c']
    """
    seen: set = set()
    out = []
    for x in seq:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def recall_at_k(ranked: Sequence[Hashable], gold: Iterable[Hashable], k: int) -> float:
    """Share of the gold units found among the first ``k`` distinct ranked units.

    Parameters
    ----------
    ranked:
        Unit keys, best first; duplicates count once.
    gold:
        Relevant unit keys (at least one).
    k:
        Cut-off, >= 1.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        When ``gold`` is empty or ``k < 1``.

    Examples
    --------
    >>> recall_at_k(["x", "a", "x", "b"], {"a", "b"}, 2)
    0.5
    """
    gold = set(gold)
    if not gold:
        raise ValueError("recall_at_k needs at least one gold unit")
    if k < 1:
        raise ValueError("k must be >= 1")
    top = set(distinct(ranked)[:k])
    return len(top & gold) / len(gold)


def hit_at_k(ranked: Sequence[Hashable], gold: Iterable[Hashable], k: int) -> float:
    """1.0 when any gold unit is among the first ``k`` distinct ranked units, else 0.0."""
    gold = set(gold)
    return 1.0 if set(distinct(ranked)[:k]) & gold else 0.0


def reciprocal_rank(ranked: Sequence[Hashable], gold: Iterable[Hashable]) -> float:
    """1 / (rank of the first gold unit among distinct ranked units); 0.0 when absent.

    Examples
    --------
    >>> reciprocal_rank(["x", "x", "a"], {"a"})
    0.5
    """
    gold = set(gold)
    for i, u in enumerate(distinct(ranked), 1):
        if u in gold:
            return 1.0 / i
    return 0.0


def mrr(reciprocal_ranks: Iterable[float]) -> float:
    """Mean reciprocal rank; 0.0 for no values."""
    vals = list(reciprocal_ranks)
    return sum(vals) / len(vals) if vals else 0.0


def normalize_title(title: str) -> str:
    """Case-folded title with whitespace runs collapsed to one space.

    Examples
    --------
    >>> normalize_title("  Camera   SETTINGS ")
    'camera settings'
    """
    return " ".join(str(title).split()).casefold()


def path_matches(path: Sequence[str], gold_path: Sequence[str], mode: str = "tail") -> bool:
    """Whether an evidence path matches a gold section path (titles compared normalized).

    Parameters
    ----------
    path:
        Evidence titles from the domain down to the chunk's heading.
    gold_path:
        Gold titles, e.g. ``["Apps", "Samsung apps", "Camera", "Camera settings"]``.
    mode:
        ``"tail"``: the last ``len(gold_path)`` titles of ``path`` equal the gold titles
        (the chunk sits exactly in the gold section). ``"subtree"``: the gold titles occur
        as a contiguous run anywhere in ``path`` (the chunk sits in the gold section or
        below it).

    Returns
    -------
    bool

    Examples
    --------
    >>> path_matches(["Galaxy_S10", "Apps", "Camera"], ["apps", " camera"])
    True
    >>> path_matches(["D", "Apps", "Camera", "Modes"], ["Apps", "Camera"], mode="subtree")
    True
    """
    p = [normalize_title(t) for t in path]
    g = [normalize_title(t) for t in gold_path]
    if not g or len(g) > len(p):
        return False
    if mode == "tail":
        return p[-len(g):] == g
    if mode == "subtree":
        return any(p[i:i + len(g)] == g for i in range(len(p) - len(g) + 1))
    raise ValueError(f"unknown mode {mode!r}")


def _parts(path: str) -> list[str]:
    p = str(path).replace("\\", "/")
    if "://" in p:
        p = p.split("://", 1)[1]
    return [x for x in p.split("/") if x and x != "."]


def source_matches(source: str, rel_path: str) -> bool:
    """Whether an evidence ``source`` names the corpus file ``rel_path``.

    The source may be absolute, relative to the corpus root or a URI; it matches when its
    trailing path components equal those of ``rel_path``.

    Examples
    --------
    >>> source_matches("/tmp/corpus/musique/passages/p0001.md", "musique/passages/p0001.md")
    True
    >>> source_matches("passages/p0001.md", "musique/passages/p0001.md")
    False
    """
    s, r = _parts(source), _parts(rel_path)
    return bool(r) and len(s) >= len(r) and s[-len(r):] == r


def routing_decided(routing: Sequence[Mapping]) -> bool:
    """False when the routing list makes no choice: several domains, all equally confident
    (what the query module reports with routing off)."""
    confs = {round(float(r.get("confidence", 0.0)), 6) for r in routing}
    return not (len(routing) > 1 and len(confs) == 1)


def d_match(routing: Sequence[Mapping], gold_domain: str) -> Optional[float]:
    """1.0 when the top routed domain is the gold domain, else 0.0 (also for no routing);
    None when the routing made no decision (see :func:`routing_decided`)."""
    if not routing:
        return 0.0
    if not routing_decided(routing):
        return None
    return 1.0 if routing[0].get("domain") == gold_domain else 0.0


def collection_of(evidence: Mapping) -> Optional[str]:
    """The collection an evidence item comes from.

    Uses an explicit ``collection`` field when the result carries one, else the path
    component after the evidence's domain in ``source``.
    """
    if evidence.get("collection"):
        return str(evidence["collection"])
    parts = _parts(evidence.get("source", ""))
    dom = evidence.get("domain")
    if dom in parts:
        i = len(parts) - 1 - parts[::-1].index(dom)
        if i + 1 < len(parts) - 1:       # a folder below the domain, not the file
            return parts[i + 1]
    return None


def c_match(result: Mapping, gold_domain: str, gold_collection) -> Optional[float]:
    """1.0 when the routed domain and collection equal the gold ones, else 0.0; None when
    the routing made no decision.

    The collection comes from ``routing[0]["collection"]`` when the router reports one,
    otherwise from the top-1 evidence item (see :func:`collection_of`). ``gold_collection``
    is a name or a list of accepted names (folder name and title).
    """
    names = [gold_collection] if isinstance(gold_collection, str) else list(gold_collection)
    names = {normalize_title(n) for n in names}
    routing = result.get("routing") or []
    dm = d_match(routing, gold_domain)
    if dm is None:
        return None
    if not dm:
        return 0.0
    coll = routing[0].get("collection")
    if coll is None:
        ev = result.get("evidence") or []
        coll = collection_of(ev[0]) if ev else None
    return 1.0 if coll is not None and normalize_title(coll) in names else 0.0


def wrong_product(evidence: Sequence[Mapping], gold_domain: str) -> Optional[float]:
    """1.0 when the top-1 evidence item comes from another domain, 0.0 when from the gold
    domain, None when there is no evidence."""
    if not evidence:
        return None
    return 0.0 if evidence[0].get("domain") == gold_domain else 1.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation (numpy's default).

    Examples
    --------
    >>> percentile([1, 2, 3, 4], 50)
    2.5
    """
    vals = sorted(float(v) for v in values)
    if not vals:
        return math.nan
    pos = (len(vals) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def latency_summary(ms: Iterable[float]) -> dict:
    """``{"p50_ms", "p95_ms", "mean_ms", "n"}`` over the given latencies."""
    vals = [float(v) for v in ms if v is not None]
    if not vals:
        return {"p50_ms": None, "p95_ms": None, "mean_ms": None, "n": 0}
    return {"p50_ms": round(percentile(vals, 50), 1), "p95_ms": round(percentile(vals, 95), 1),
            "mean_ms": round(sum(vals) / len(vals), 1), "n": len(vals)}
