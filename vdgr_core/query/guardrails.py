"""Guardrails (DCD + enterprise practice): a query screen and an answer screen.

* The **query screen** refuses a question that contains a deny-listed word or phrase (the owner
  extends the list in configuration). A refused question retrieves nothing.
* The **answer screen** runs on the answer before it is returned: credentials and private keys
  are redacted, e-mail addresses and phone numbers are redacted unless they appear in the
  evidence the reader was allowed to see, and answer sentences whose content words are mostly
  absent from that evidence are reported as unsupported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

_WORD = re.compile(r"[a-z0-9]+")
_SECRET_PATTERNS = (
    ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)),
    ("api_key", re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}\b")),
    ("aws_key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("password", re.compile(r"(?i)\b(password|passwd|secret|token)\s*[:=]\s*\S+")),
)
_PERSONAL_PATTERNS = (
    ("email", re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b")),
    ("phone", re.compile(r"(?<!\w)\+?\d[\d ()-]{7,}\d(?!\w)")),
)
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


def screen_answer(answer: str, evidence_texts: Sequence[str], *, min_support: float = 0.5) -> AnswerScreen:
    """Redact secrets and unsupported personal data; report unsupported sentences."""
    context = "\n".join(evidence_texts)
    redactions: list[str] = []
    for kind, pattern in _SECRET_PATTERNS:
        answer, n = pattern.subn(f"[redacted {kind}]", answer)
        redactions += [kind] * n
    for kind, pattern in _PERSONAL_PATTERNS:
        def _keep_if_cited(m, kind=kind):
            if m.group(0) in context:
                return m.group(0)
            redactions.append(kind)
            return f"[redacted {kind}]"
        answer = pattern.sub(_keep_if_cited, answer)
    context_words = set(_WORD.findall(context.casefold()))
    unsupported = []
    for sentence in re.split(r"(?<=[.!?])\s+", answer):
        words = [w for w in _WORD.findall(re.sub(r"\[\d+\]", "", sentence).casefold()) if w not in _STOP]
        if len(words) >= 4 and sum(w in context_words for w in words) / len(words) < min_support:
            unsupported.append(sentence.strip())
    return AnswerScreen(answer, tuple(sorted(set(redactions))), tuple(unsupported))
