"""Extractive context compression: the evidence cut to a token budget before the LLM call.

Each evidence item is split into sentences; sentences are scored by the share of the
question's content words they contain, plus a small bonus for the item's rank and for a
section's first sentence (which usually says what the section is about). The best sentences
are kept, greedily, until the budget is spent; every item keeps at least its best sentence
while the budget allows, so each citation number still points at what the model saw.
Kept sentences stay in their original order; gaps are marked with `` … ``. Items left
without a sentence get an empty text (the prompt then omits them, numbers unchanged).

Tokens are counted as words and punctuation marks (``count_tokens``), a stand-in for a
model's tokenizer that needs no vocabulary.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from vdgr_core.query.result import Evidence
from vdgr_core.query.textutil import overlap, terms
from vdgr_core.sentences import split_sentences

_TOKEN = re.compile(r"\w+|[^\w\s]")
GAP = " … "       # one token; every kept sentence is charged one token for a possible gap


def count_tokens(text: str) -> int:
    """Words and punctuation marks in ``text``."""
    return len(_TOKEN.findall(text or ""))


@dataclass(frozen=True)
class Compressed:
    """Evidence compressed for the prompt, with the token counts before and after."""

    evidence: list[Evidence]
    tokens_before: int
    tokens_after: int

    @property
    def saving(self) -> float:
        """Share of the evidence tokens removed (0 when nothing was)."""
        return 1.0 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0

    def trace_data(self) -> dict:
        return {"tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "saving": round(self.saving, 4)}


def compress_evidence(question: str, evidence: Sequence[Evidence], budget_tokens: int) -> Compressed:
    """Keep the sentences of ``evidence`` that matter most for ``question``, within the budget.

    Parameters
    ----------
    question : str
    evidence : sequence of Evidence
        Ranked evidence (1 = best); the order and the number of items are kept.
    budget_tokens : int
        Most evidence tokens to keep (``count_tokens``); 0 or less keeps everything.

    Returns
    -------
    Compressed
    """
    items = list(evidence)
    before = sum(count_tokens(ev.text) for ev in items)
    if budget_tokens <= 0 or before <= budget_tokens:
        return Compressed(items, before, before)
    qterms = terms(question)
    sents = [[s for s in split_sentences(ev.text) if s.strip()] for ev in items]
    cands = []          # (score, item, position, tokens)
    for n, ss in enumerate(sents):
        for pos, s in enumerate(ss):
            score = overlap(qterms, s) + 0.1 / (n + 1) + (0.05 if pos == 0 else 0.0)
            cands.append((score, n, pos, count_tokens(s) + 1))
    order = sorted(cands, key=lambda c: (-c[0], c[1], c[2]))
    keep: set[tuple[int, int]] = set()
    used = 0
    # first pass: every item's best sentence (in item rank order), then the rest by score
    best_of: dict[int, tuple] = {}
    for c in order:
        best_of.setdefault(c[1], c)
    for n in sorted(best_of):
        c = best_of[n]
        if used + c[3] <= budget_tokens:
            keep.add((c[1], c[2]))
            used += c[3]
    for c in order:
        if (c[1], c[2]) not in keep and used + c[3] <= budget_tokens:
            keep.add((c[1], c[2]))
            used += c[3]
    out = []
    for n, (ev, ss) in enumerate(zip(items, sents)):
        text, last = "", None
        for pos, s in enumerate(ss):
            if (n, pos) in keep:
                sep = "" if last is None else (" " if pos == last + 1 else GAP)
                text += sep + s.strip()
                last = pos
        out.append(ev.model_copy(update={"text": text}))
    return Compressed(out, before, sum(count_tokens(ev.text) for ev in out))
