"""The query module's tokens: lower-cased alphanumeric words and a light stemmer.

Shared by the query side (overlap measures, the TOC route) and the layout writer (directory
labels), which must tokenize alike.
"""
from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"[a-z0-9]+\+*")


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens; a trailing ``+`` stays part of the token (``s10+``)."""
    return _TOKEN.findall((text or "").lower())


@lru_cache(maxsize=1 << 17)
def stem(t: str) -> str:
    """Light stemming: one of the suffixes ing, es, ed, s removed from a long enough word
    (memoized: a corpus repeats its words)."""
    for suf in ("ing", "es", "ed", "s"):
        if len(t) > len(suf) + 2 and t.endswith(suf):
            return t[: -len(suf)]
    return t
