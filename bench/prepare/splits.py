"""Development / test halves of a question set, fixed by a hash of the question id.

Methods and constants are chosen on the development half only; both halves are reported.
The split depends on nothing but the id, so adding or removing questions never moves the
others, and every tool (the ablation, the tests) agrees on it.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Mapping

DEV, TEST = "dev", "test"
HALVES = (DEV, TEST)


def half_of(qid: str) -> str:
    """``"dev"`` or ``"test"``: the lowest bit of the first byte of sha256(id).

    Examples
    --------
    >>> half_of("s10-266"), half_of("s10-267")
    ('test', 'dev')
    """
    return DEV if hashlib.sha256(str(qid).encode("utf-8")).digest()[0] % 2 == 0 else TEST


def split(questions: Iterable[Mapping]) -> dict[str, list[Mapping]]:
    """``{"dev": [...], "test": [...]}`` in input order."""
    out: dict[str, list[Mapping]] = {DEV: [], TEST: []}
    for q in questions:
        out[half_of(q["id"])].append(q)
    return out
