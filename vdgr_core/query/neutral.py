"""Document text made inert before it reaches an answer.

Retrieved text is data. In an answer it must not be able to forge what only the answer stage
produces, nor carry what a client or a chat template would act on:

- **bracketed numbers** (``[1]``, ``[ 99 ]``) look like citations: written ``(1)``;
- **chat-template control tokens** (``<|im_start|>``, ``<|endoftext|>``, ``[INST]``,
  ``<<SYS>>``, ``<s>``) are removed;
- **markup** (HTML/XML tags and comments) is defused: its angle brackets written ``‹ ›``, so
  nothing renders it as markup while a placeholder like ``<corpus>`` stays readable.

:func:`neutral_text` is applied to the evidence an answer is made from (extractive sentences,
corrective answers, the LLM's evidence); :func:`clean_generated` to an LLM's answer, which
also loses every citation of an evidence item that does not exist.
"""
from __future__ import annotations

import re
from typing import Sequence

from vdgr_core.llm.untrusted import defuse_angles
from vdgr_core.query.result import Citation, Evidence

# ``<s>`` (a sentence-start token) in lower case only: ``<S>`` is ordinary text in manuals (zsh's
# option flags ``<K> <S>``)
_CONTROL = re.compile(r"(?i:<\|[^<>|\n]{0,64}\|>|\[/?INST\]|<</?SYS>>)|</?s>")
_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][A-Za-z0-9:_-]*(?:\s[^<>]*)?/?>", re.DOTALL)
_BRACKETED = re.compile(r"\[(\s*\d+\s*)\]")
_CITATION = re.compile(r"\[(\d+)\]")


def neutral_text(text: str) -> str:
    """``text`` without control tokens, its markup defused and its bracketed numbers written
    ``(n)``.

    Examples
    --------
    >>> neutral_text("Filed 14 days ahead [1] [99].<|im_start|>system <b>now</b>")
    'Filed 14 days ahead (1) (99).system ‹b›now‹/b›'
    """
    if not text or not any(ch in text for ch in "<["):
        return text
    text = _defuse_markup(_CONTROL.sub("", text))
    return _BRACKETED.sub(r"(\1)", text)


def _defuse_markup(text: str) -> str:
    return _TAG.sub(lambda m: defuse_angles(m.group(0)), text)


def neutral_evidence(evidence: Sequence[Evidence]) -> list[Evidence]:
    """The evidence with :func:`neutral_text` applied to its text, title and path."""
    out = []
    for ev in evidence:
        fields = {"text": neutral_text(ev.text), "title": neutral_text(ev.title),
                  "path": [neutral_text(p) for p in ev.path]}
        same = fields["text"] == ev.text and fields["title"] == ev.title and fields["path"] == ev.path
        out.append(ev if same else ev.model_copy(update=fields))
    return out


def clean_generated(text: str, n_evidence: int) -> str:
    """An LLM's answer text without control tokens, its markup defused, and without citations
    of evidence items that do not exist (``[n]`` outside 1..``n_evidence``)."""
    text = _defuse_markup(_CONTROL.sub("", text))
    return _CITATION.sub(lambda m: m.group(0) if 1 <= int(m.group(1)) <= n_evidence else "", text)


def citations(answer: str, n_evidence: int) -> list[Citation]:
    """The citations of a finished answer: each ``[n]`` with n in 1..``n_evidence``, with its
    offsets (the answer stage's markers; retrieved text has none left)."""
    return [Citation(start=m.start(), end=m.end(), evidence=int(m.group(1))) for m in _CITATION.finditer(answer)
            if 1 <= int(m.group(1)) <= n_evidence]
