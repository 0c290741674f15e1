"""Small lexical helpers shared by routing, selection, sufficiency and answers."""
from __future__ import annotations

from functools import lru_cache
from typing import Iterable

from vdgr_core.stopwords import STOP_WORDS as _STOP
from vdgr_core.tokens import _TOKEN, stem as _stem, tokens  # noqa: F401  (re-exported)


def terms(text: str) -> list[str]:
    """Distinct content words of ``text`` in order of first appearance (no stopwords)."""
    seen: dict[str, None] = {}
    for t in tokens(text):
        if t not in _STOP and (len(t) > 1 or t.isdigit()):
            seen.setdefault(t, None)
    return list(seen)


@lru_cache(maxsize=65536)
def term_set(text: str) -> frozenset[str]:
    """Light-stemmed token set of ``text`` for overlap measures.

    Memoized: the same chunk and directory texts are measured by every query (TOC fine
    selection, backtracking, sufficiency), and stemming them again dominated those stages.
    """
    return frozenset(_stem(t) for t in tokens(text))


def overlap(query_terms: Iterable[str], text: str) -> float:
    """Fraction of ``query_terms`` (light-stemmed) present in ``text``; 0 when there are none."""
    q = {_stem(t) for t in query_terms}
    if not q:
        return 0.0
    return len(q & term_set(text)) / len(q)


def missing_terms(query_terms: Iterable[str], texts: Iterable[str]) -> list[str]:
    """The query terms not present in any of ``texts`` (order kept)."""
    have: set[str] = set()
    for t in texts:
        have |= term_set(t)
    return [t for t in query_terms if _stem(t) not in have]
