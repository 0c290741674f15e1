"""Ragas-style answer and context metrics judged by an LLM (used when one is configured).

Each metric is the standard definition, computed from structured judgements:

* **faithfulness**: the share of the answer's claims that the retrieved context supports;
* **answer relevance**: the judge's 0-1 rating of how directly the answer addresses the question;
* **context precision**: average precision of the retrieved contexts, each judged relevant or not
  to the question (relevant contexts ranked first score higher);
* **context recall**: the share of the reference answer's statements the context supports.

Retrieved text and answers go to the judge inside untrusted-data delimiters.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from pydantic import BaseModel, Field

from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

STAGE = "eval_judge"


class ClaimVerdicts(BaseModel):
    claims: list[str] = Field(description="the atomic factual claims of the text")
    supported: list[bool] = Field(description="for each claim, whether the context supports it")


class Relevance(BaseModel):
    relevance: float = Field(ge=0, le=1)


class ContextVerdicts(BaseModel):
    relevant: list[bool] = Field(description="for each context in order, is it useful to answer")


@dataclass(frozen=True)
class JudgedScores:
    faithfulness: Optional[float]
    answer_relevance: Optional[float]
    context_precision: Optional[float]
    context_recall: Optional[float]


def _context_block(contexts: Sequence[str]) -> str:
    return "\n".join(wrap_untrusted(c, f"CONTEXT {i + 1}") for i, c in enumerate(contexts))


def _ask(llm, system: str, user: str, model):
    return llm.structured(STAGE, [{"role": "system", "content": system + " " + UNTRUSTED_NOTICE},
                                  {"role": "user", "content": user}], model)


def _supported_share(llm, text: str, contexts: Sequence[str]) -> Optional[float]:
    if not text.strip():
        return None
    reply = _ask(llm, "Split the TEXT into atomic factual claims and say for each whether the CONTEXT "
                      "supports it. Return JSON.",
                 f"{_context_block(contexts)}\n\n{wrap_untrusted(text, 'TEXT')}", ClaimVerdicts)
    n = min(len(reply.claims), len(reply.supported))
    return sum(reply.supported[:n]) / n if n else None


def average_precision(relevant: Sequence[bool]) -> Optional[float]:
    """Average precision of a ranked list of relevance judgements (None when none is relevant)."""
    hits, total = 0, 0.0
    for i, rel in enumerate(relevant, start=1):
        if rel:
            hits += 1
            total += hits / i
    return total / hits if hits else None


def judge(llm, question: str, answer: str, contexts: Sequence[str],
          reference: Optional[str] = None) -> JudgedScores:
    """All four scores for one question (context recall only with a reference answer)."""
    faithfulness = _supported_share(llm, answer, contexts)
    relevance = _ask(llm, "Rate from 0 to 1 how directly the ANSWER addresses the QUESTION. Return JSON.",
                     f"{wrap_untrusted(question, 'QUESTION')}\n\n{wrap_untrusted(answer, 'ANSWER')}",
                     Relevance).relevance
    verdicts = _ask(llm, "For each CONTEXT in order, say whether it is useful to answer the QUESTION. "
                         "Return JSON with one boolean per context.",
                    f"{wrap_untrusted(question, 'QUESTION')}\n\n{_context_block(contexts)}",
                    ContextVerdicts).relevant[: len(contexts)]
    precision = average_precision(verdicts) if contexts else None
    if precision is None and contexts:
        precision = 0.0
    recall = _supported_share(llm, reference, contexts) if reference else None
    return JudgedScores(faithfulness, relevance, precision, recall)
