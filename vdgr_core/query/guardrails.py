"""Guardrails (DCD + enterprise practice): a query screen and an answer screen.

* The **query screen** refuses a question that contains a deny-listed word or phrase (the owner
  extends the list in configuration). A refused question retrieves nothing.
* The **answer screen** runs on the answer before it is returned: credentials are redacted with
  the detector indexing masks documents with (:mod:`vdgr_core.safety.secrets`), e-mail addresses
  and phone numbers (:mod:`vdgr_core.safety.personal`, ``phonenumbers``) are redacted unless they
  appear in the evidence the reader was allowed to see, and answer sentences whose content
  words are mostly absent from that evidence are reported as unsupported. Dates, amounts,
  versions and part numbers are left as they are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from vdgr_core.safety.personal import DEFAULT_PHONE_REGIONS, find_personal
from vdgr_core.safety.secrets import find_secrets, mask_token

_WORD = re.compile(r"[a-z0-9]+")
_CITATION = re.compile(r"\[\d+\]")
_STOP = frozenset("a an and are as at be by can do for from how i if in is it of on or the this "
                  "to was what when where which with you your".split())


@dataclass(frozen=True)
class QueryScreen:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class AnswerScreen:
    answer: str
    redactions: tuple[str, ...]          # kinds redacted, e.g. ("api_key", "email")
    unsupported: tuple[str, ...]         # answer sentences not supported by the evidence


def screen_query(question: str, deny_list: Sequence[str]) -> QueryScreen:
    """Refuse ``question`` when it contains a deny-listed word or phrase (whole words, any case)."""
    words = " " + " ".join(_WORD.findall(question.casefold())) + " "
    for term in deny_list:
        norm = " ".join(_WORD.findall(term.casefold()))
        if norm and f" {norm} " in words:
            return QueryScreen(False, f"the question contains the blocked term {term!r}")
    return QueryScreen(True)


def _replace(text: str, spans, replacement) -> str:
    parts, pos = [], 0
    for s in spans:
        parts += [text[pos:s.start], replacement(s)]
        pos = s.end
    return "".join(parts) + text[pos:]


def screen_answer(answer: str, evidence_texts: Sequence[str], *, min_support: float = 0.5,
                  phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS) -> AnswerScreen:
    """Redact credentials and unsupported personal data; report unsupported sentences.

    Parameters
    ----------
    answer : str
        The answer text (extractive or from the LLM).
    evidence_texts : sequence of str
        The texts of the evidence the reader may see: personal data found there is kept.
    min_support : float
        Share of an answer sentence's content words that must occur in the evidence.
    phone_regions : sequence of str
        Regions whose national phone formats are recognised.
    """
    context = "\n".join(evidence_texts)
    redactions: list[str] = []
    secrets = find_secrets(answer)
    redactions += [s.kind for s in secrets]
    answer = _replace(answer, secrets, lambda s: mask_token(s.kind))
    # citations blanked (same length, so spans stay in place): "030 901820 [1]" is a number
    probe = _CITATION.sub(lambda m: " " * len(m.group(0)), answer)
    personal = [p for p in find_personal(probe, phone_regions) if answer[p.start:p.end] not in context]
    redactions += [p.kind for p in personal]
    answer = _replace(answer, personal, lambda p: f"[redacted {p.kind}]")
    context_words = set(_WORD.findall(context.casefold()))
    unsupported = []
    for sentence in re.split(r"(?<=[.!?])\s+", answer):
        words = [w for w in _WORD.findall(re.sub(r"\[\d+\]", "", sentence).casefold()) if w not in _STOP]
        if len(words) >= 4 and sum(w in context_words for w in words) / len(words) < min_support:
            unsupported.append(sentence.strip())
    return AnswerScreen(answer, tuple(sorted(set(redactions))), tuple(unsupported))
