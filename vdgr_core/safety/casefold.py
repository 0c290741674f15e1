"""Lower-casing that keeps what a case-insensitive ``re`` pattern would match.

Python's ``re`` with ``IGNORECASE`` also pairs "ı" (dotless i) with ``i`` and "ſ" (long s) with
``s``, which ``str.lower()`` keeps as they are, and "İ" with ``i``, which ``str.lower()`` turns
into two characters. Literal tests and case-sensitive patterns run on :func:`fold_lower`'s
text therefore find at least what the case-insensitive patterns would (the three are every
character outside ASCII that ``re`` matches to an ASCII letter; tests/vdgr_core/safety checks).
"""
from __future__ import annotations

from typing import Optional

#: characters outside ASCII that ``re``'s IGNORECASE matches to an ASCII letter, as lower-cased
ASCII_FOLD = {ord("ı"): "i", ord("ſ"): "s"}


def fold_lower(text: str) -> Optional[str]:
    """``text`` lower-cased with :data:`ASCII_FOLD` applied, at the same offsets; None when
    lower-casing changes the length (an "İ"), where only case-insensitive patterns are exact."""
    low = text.lower()
    if text.isascii():
        return low
    if len(low) != len(text):
        return None
    return low.translate(ASCII_FOLD)


__all__ = ["ASCII_FOLD", "fold_lower"]
