"""Ranked lists of sections and their fusion.

Every route searches chunks (small units match precisely) and reports **sections** (the
parent-document pattern: match small chunks, return their parent). A section's score in a
route is the score of its best chunk: no bonus for several matching chunks, which let one long
section fill the top of a list. Fusion combines section lists of several routes:

- ``"rrf"``: reciprocal rank fusion, ``sum_l w_l / (rrf_k + rank_l)``; ranks only, so it is
  blind to score shapes, but it also ignores how decisive a list is.
- ``"convex"``: ``sum_l w_l * minmax_l(score)`` (Bruch, Gai & Ingber, TOIS 2023); the top of
  every list maps to 1 however weak the list is.
- ``"zscore"``: ``sum_l w_l * (score - floor_l) / sd_l``: each list's scores in units of its
  own standard deviation over its candidates, counted from the list's floor (its last
  candidate's score). A list whose best candidates stand out from its own background counts
  more than one whose candidates all score alike, whatever the scale; a decisive hit is never
  capped (no clipping at a few deviations).

A section that a list did not return is scored at that list's floor: the list says only that
the section scores no higher than its last candidate. With ``"zscore"`` and ``"convex"`` that
is a contribution of 0; measured from the mean instead (or capped at mean - 3 deviations) a
section missing from one list is pushed far below sections that list did return, which let a
weak dense list outvote a decisive BM25 hit (bench/quality/fusion_study.py measures both). Ties break
on the section's stable rank.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Hashable, Literal, Mapping, Optional, Sequence

import numpy as np

FusionMethod = Literal["rrf", "convex", "zscore"]


@dataclass
class Ranked:
    """One search's content rows: ``hits`` are (row, score), best first."""

    route: str
    hits: list[tuple[int, float]] = field(default_factory=list)


@dataclass(frozen=True)
class SectionHit:
    """A section found by one or more routes.

    ``rows`` are the matched content rows of the section, best first (the passage shown to
    the reader is built from them); ``routes`` every route that found the section.
    """

    section: int
    score: float
    rows: tuple[int, ...]
    routes: tuple[str, ...]

    @property
    def row(self) -> int:
        """The best matched content row."""
        return self.rows[0]


@dataclass
class SectionList:
    """One route's sections, best first.

    ``parts`` are the single-retriever lists a fused list was made from (route 1's BM25 and
    dense sections), best first; empty for a list of one retriever. The evidence stage's
    recall tail reads them (:func:`recall_tail`).
    """

    route: str
    hits: list[SectionHit] = field(default_factory=list)
    parts: tuple["SectionList", ...] = ()


def by_section(ranked: Ranked, section_of: np.ndarray, limit: Optional[int] = None) -> SectionList:
    """Group a chunk list into sections scored by their best chunk (order of first match)."""
    out: dict[int, list] = {}
    rows = [r for r, _ in ranked.hits]
    sections = section_of.take(rows) if hasattr(section_of, "take") else [section_of[r] for r in rows]
    for (row, score), s in zip(ranked.hits, sections):
        s = int(s)
        got = out.get(s)
        if got is None:
            out[s] = [score, [row]]
        elif row not in got[1]:
            got[1].append(row)
    hits = [SectionHit(s, float(v[0]), tuple(v[1]), (ranked.route,)) for s, v in out.items()]
    return SectionList(ranked.route, hits[:limit] if limit is not None else hits)


def _normalized(scores: np.ndarray, method: FusionMethod, rrf_k: int) -> np.ndarray:
    if method == "rrf":
        return 1.0 / (rrf_k + np.arange(1, len(scores) + 1, dtype=np.float64))
    if method == "convex":
        lo, hi = float(scores.min()), float(scores.max())
        return (scores - lo) / (hi - lo) if hi > lo else np.ones_like(scores)
    sd = float(scores.std())
    if sd <= 1e-12:        # one candidate, or all alike: each counts one deviation
        return np.ones_like(scores)
    return (scores - float(scores.min())) / sd


def fuse(lists: Sequence[SectionList], section_rank: np.ndarray, method: FusionMethod = "rrf",
         rrf_k: int = 60, weights: Optional[Mapping[str, float]] = None,
         route: Optional[str] = None) -> list[SectionHit]:
    """Fuse section lists into one, best first.

    Parameters
    ----------
    lists : sequence of SectionList
        Each best first; a section appears at most once per list.
    section_rank : ndarray
        Stable tie-break rank of every section.
    method : {"rrf", "convex", "zscore"}
        See the module docstring.
    rrf_k : int
        The RRF constant (60 in Cormack et al.).
    weights : mapping of route name to weight, optional
        A list's contributions are multiplied by its route's weight (1.0 when absent).
    route : str, optional
        When given, the fused hits report this route name instead of the lists' names
        (route 1 reports ``hybrid`` for its BM25 and dense halves).

    Returns
    -------
    list of SectionHit
        Matched rows united in the order the lists give them (best list first).
    """
    score: dict[int, float] = {}
    best_pos: dict[int, tuple[int, int]] = {}
    rows: dict[int, list[int]] = {}
    routes: dict[int, list[str]] = {}
    for li, lst in enumerate(lists):
        if not lst.hits:
            continue
        w = 1.0 if weights is None else float(weights.get(lst.route, 1.0))
        norm = _normalized(np.array([h.score for h in lst.hits], dtype=np.float64), method, rrf_k)
        for rank, (h, v) in enumerate(zip(lst.hits, norm)):
            s = h.section
            score[s] = score.get(s, 0.0) + w * float(v)
            pos = (rank, li)
            if s not in best_pos or pos < best_pos[s]:
                best_pos[s] = pos
            got = rows.setdefault(s, [])
            got.extend(r for r in h.rows if r not in got)
            names = routes.setdefault(s, [])
            for name in ([route] if route else h.routes):
                if name not in names:
                    names.append(name)
    order = sorted(score, key=lambda s: (-score[s], int(section_rank[s])))
    return [SectionHit(s, score[s], tuple(rows[s]), tuple(routes[s])) for s in order]


def add_candidates(anchor: Sequence[SectionHit], extra: Sequence[SectionHit], start: int) -> list[SectionHit]:
    """Insert ``extra`` sections that ``anchor`` lacks after the first ``start`` anchor hits.

    Used to merge a follow-up search (reflection, backtracking) so it cannot push the first
    round's best evidence out: the anchor's first ``start`` sections keep their places, then
    new sections and the remaining anchor sections alternate. Sections both lists hold keep
    their anchor place and gain the extra routes and rows.
    """
    extra_by = {h.section: h for h in extra}
    merged = []
    for h in anchor:
        e = extra_by.pop(h.section, None)
        if e is not None:
            h = SectionHit(h.section, h.score, h.rows + tuple(r for r in e.rows if r not in h.rows),
                           h.routes + tuple(x for x in e.routes if x not in h.routes))
        merged.append(h)
    new = [h for h in extra if h.section in extra_by]
    head, tail = merged[:start], merged[start:]
    out = list(head)
    for i in range(max(len(tail), len(new))):
        if i < len(new):
            out.append(new[i])
        if i < len(tail):
            out.append(tail[i])
    return out


def copies_last(hits: Sequence[SectionHit], key_of: Callable[[SectionHit], Hashable], k: int) -> list[SectionHit]:
    """Move each section whose ``key_of`` repeats an earlier section's behind the first ``k``.

    A manual often prints the same entry in several documents (git's pages include each
    other's option lists; a glossary is also a chapter of the user manual). Each copy would
    take one of the ``k`` places and show the reader nothing new, so the first of them stays
    where it ranked and the others follow the first ``k`` sections, in order.

    Examples
    --------
    >>> hs = [SectionHit(s, 1.0, (s,), ("bm25",)) for s in range(4)]
    >>> [h.section for h in copies_last(hs, lambda h: "ab"[h.section % 2] if h.section < 3 else "c", 3)]
    [0, 1, 3, 2]
    """
    seen: set = set()
    top: list[SectionHit] = []
    held: list[SectionHit] = []
    for i, h in enumerate(hits):
        if len(top) >= k:
            return top + held + list(hits[i:])
        key = key_of(h)
        if key in seen:
            held.append(h)
            continue
        seen.add(key)
        top.append(h)
    return top + held


def cap_per_document(hits: Sequence[SectionHit], doc_of: np.ndarray, k: int) -> list[SectionHit]:
    """Reorder so that no document holds more than half of the first ``k`` sections while
    sections of other documents are available; the sections held back follow, in order."""
    cap = max(1, k // 2)
    count: dict[int, int] = {}
    top: list[SectionHit] = []
    held: list[SectionHit] = []
    for h in hits:
        d = int(doc_of[h.section])
        if len(top) < k and count.get(d, 0) >= cap:
            held.append(h)
            continue
        count[d] = count.get(d, 0) + 1
        top.append(h)
    if len(top) >= k:
        return top[:k] + held + top[k:]
    # not enough other documents: fill the first k from the held-back sections, in order
    need = k - len(top)
    filled = top + held[:need]
    order = {id(h): i for i, h in enumerate(hits)}
    filled.sort(key=lambda h: order[id(h)])
    return filled + held[need:]


def recall_tail(hits: Sequence[SectionHit], parts: Sequence[SectionList], k: int, doc_of: np.ndarray,
                key_of: Callable[[SectionHit], Hashable]) -> list[SectionHit]:
    """The first half of ``k`` as fused; the other places in turn to the fused list and each
    single retriever: its best section not shown yet.

    Fusion ranks a section high when both retrievers rank it well; a section that one
    retriever finds decisively and the other misses sinks behind many middling sections both
    half-agree on, and the places below the first few then show little new (on the Debian
    manuals no answer sat at fused places 6-10 that was not already in the first 5). So the
    first ``ceil(k/2)`` fused sections keep their places and the remaining places of the first
    ``k`` go round-robin to the fused list (the graph walk's bridges are there: without it,
    MuSiQue's dev R@10 lost 1.5 points) and each list of ``parts`` (BM25, then dense): its best
    section not already shown, not a copy of one shown (``key_of``), and not of a document
    that already holds half of ``k`` (as :func:`cap_per_document`). A section the fused list
    holds comes with the fused list's rows and routes. Every section of ``hits`` not placed
    follows, in order, so nothing is lost.

    Examples
    --------
    >>> fused = [SectionHit(s, 1.0, (s,), ("hybrid",)) for s in (0, 1, 2, 3)]
    >>> bm25 = SectionList("bm25", [SectionHit(s, 1.0, (s,), ("bm25",)) for s in (0, 9)])
    >>> dense = SectionList("dense", [SectionHit(s, 1.0, (s,), ("dense",)) for s in (1, 3)])
    >>> doc = np.arange(10)
    >>> [h.section for h in recall_tail(fused, [bm25, dense], 4, doc, lambda h: h.section)]
    [0, 1, 2, 9, 3]
    """
    head = (k + 1) // 2
    if len(parts) < 2 or k <= head:      # one retriever: its list is the fused list
        return list(hits)
    out = list(hits[:head])
    fused = {h.section: h for h in hits}
    shown = {h.section for h in out}
    keys = {key_of(h) for h in out}
    cap = max(1, k // 2)
    count = Counter(int(doc_of[h.section]) for h in out)
    lists = [list(hits), *(p.hits for p in parts)]
    cursors = [0] * len(lists)

    def fits(h: SectionHit, key: Hashable) -> bool:
        return h.section not in shown and key not in keys and count[int(doc_of[h.section])] < cap

    def next_of(i: int) -> Optional[tuple[SectionHit, Hashable]]:
        lst = lists[i]
        while cursors[i] < len(lst):
            h = fused.get(lst[cursors[i]].section, lst[cursors[i]])
            cursors[i] += 1
            key = key_of(h)
            if fits(h, key):
                return h, key
        return None

    while len(out) < k:
        found = [c for c in (next_of(i) for i in range(len(lists))) if c is not None]
        if not found:
            break
        for h, key in found:        # this round's earlier picks may have shown it, or filled its document
            if len(out) < k and fits(h, key):
                out.append(h)
                shown.add(h.section)
                keys.add(key)
                count[int(doc_of[h.section])] += 1
    out += [h for h in hits if h.section not in shown]
    return out


def with_first_hop(walk: SectionList, first_hop: Sequence[SectionHit], limit: int,
                   keep_head: bool = True, seeds: int = 0) -> SectionList:
    """The graph walk's sections (best first) carrying what the first hop knew of them, behind
    the first hop's best section.

    The walk is a second hop: it brings bridges up behind the first hop's best evidence, and
    does not displace it: with ``keep_head`` the first hop's best section stays first, scored
    as the walk's best (bench.quality.ablation, row "full, walk reorders the head"). A section both
    hold keeps the first hop's matched rows first and both routes; first-hop sections the walk
    did not reach follow the walk's, in their order, so a domain without a graph gives route
    1's list back. Of the first ``seeds`` first-hop sections (the walk's passage seeds), those
    the walk did not reach (a seed without entities, such as a one-line reference entry) keep
    their first-hop place (the head only with ``keep_head``), scored as the section they go
    before: the walk knows nothing of them, and they would otherwise sink behind everything it
    found (row "full + keep unreached seeds"). At most ``limit`` sections.
    """
    first = {h.section: h for h in first_hop}
    out: list[SectionHit] = []
    for h in walk.hits:
        f = first.pop(h.section, None)
        if f is not None:
            h = SectionHit(h.section, h.score, f.rows + tuple(r for r in h.rows if r not in f.rows),
                           f.routes + tuple(x for x in h.routes if x not in f.routes))
        out.append(h)
    floor = min((h.score for h in out), default=0.0)
    out += [SectionHit(h.section, floor, h.rows, h.routes) for h in first_hop if h.section in first]
    reached = {h.section for h in walk.hits}
    for place, seed in enumerate(first_hop[:seeds]):
        if seed.section in reached:
            continue
        at = next(i for i, h in enumerate(out) if h.section == seed.section)
        if at > place and (place or keep_head):
            h = out.pop(at)
            out.insert(place, SectionHit(h.section, out[place].score, h.rows, h.routes))
    if keep_head and first_hop and out and out[0].section != first_hop[0].section:
        at = next(i for i, h in enumerate(out) if h.section == first_hop[0].section)
        head = out.pop(at)
        out.insert(0, SectionHit(head.section, max(head.score, out[0].score), head.rows, head.routes))
    return SectionList(walk.route, out[:limit])
