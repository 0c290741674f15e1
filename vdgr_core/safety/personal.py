"""Personal data in text: e-mail addresses and phone numbers.

Phone numbers are found by Google's ``phonenumbers`` library (``PhoneNumberMatcher`` at
``Leniency.VALID``): a digit run counts only when it is a valid number of one of the given
regions (or an international ``+`` number), so dates (``2026-11-29``, ``29.11.2026``), amounts
(``4 100 000``), versions (``2.0.1``), part numbers (``SM-G973F``, ``0411-2345-678``), IP
addresses and ids stay as they are. E-mail addresses are matched by one pattern (local part,
``@``, a dotted domain ending in a letter-only top-level label).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import phonenumbers

# Regions whose national formats (without "+") are recognised; international numbers are
# recognised whatever the region. QueryConfig.guardrails.phone_regions overrides it.
DEFAULT_PHONE_REGIONS = ("US", "GB", "DE", "FR", "RU")

_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")


@dataclass(frozen=True)
class PersonalSpan:
    """``text[start:end]`` is personal data of ``kind`` (``email`` or ``phone``)."""

    kind: str
    start: int
    end: int


def find_personal(text: str, regions: Sequence[str] = DEFAULT_PHONE_REGIONS) -> list[PersonalSpan]:
    """E-mail addresses and phone numbers of ``text``, sorted, overlaps merged (e-mail first)."""
    spans = [PersonalSpan("email", m.start(), m.end()) for m in _EMAIL.finditer(text)]
    for region in regions or (None,):
        for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            spans.append(PersonalSpan("phone", m.start, m.end))
    spans.sort(key=lambda s: (s.start, -s.end, s.kind))
    out: list[PersonalSpan] = []
    for s in spans:
        if out and s.start < out[-1].end:
            last = out[-1]
            out[-1] = PersonalSpan(last.kind, last.start, max(last.end, s.end))
        else:
            out.append(s)
    return out


__all__ = ["DEFAULT_PHONE_REGIONS", "PersonalSpan", "find_personal"]
