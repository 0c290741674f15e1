"""Retrieval confidence and corrective answers (CRAG-style), offline.

Before answering, the evidence is scored for how well it covers the question. When the score
is low the answer does not guess: it says which of the question's terms the documents found do
not mention, points at the closest sections, and asks for clarification. No LLM is needed, so
this works the same with and without one (an LLM configured is then not called at all).

The score is the mean of two coverages of the question's content words (light-stemmed): by the
best single evidence item (title path and text) and by the top items together. It lies in
[0, 1]. ``probability`` maps it through a Platt fit measured by ``python -m
bench.quality.bench_confidence`` (EManual S10 questions, label 1 when the gold section is in the top 5,
against questions the index cannot answer; reliability table in BENCHMARKS.md): the estimated
chance that the evidence holds the answer.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from vdgr_core.query.result import Evidence
from vdgr_core.query.textutil import missing_terms, overlap, terms

TOP_EVIDENCE = 5
CLOSEST = 3
# Platt scaling P = 1 / (1 + exp(-(A * score + B))), fitted by bench.quality.bench_confidence (0b3d99b)
PLATT_A, PLATT_B = 10.8812, -6.611


def calibrated(score: float) -> float:
    """The estimated probability that the evidence holds the answer, for a confidence score."""
    return round(1.0 / (1.0 + math.exp(-(PLATT_A * score + PLATT_B))), 4)


@dataclass(frozen=True)
class Confidence:
    """How well the evidence covers the question.

    Attributes
    ----------
    score : float
        In [0, 1]: mean of ``best_item`` and ``top_items``.
    best_item : float
        Share of the question's content words found in the best single evidence item.
    top_items : float
        Share found in the top evidence items together.
    missing : tuple of str
        Question words no top evidence item mentions.
    low : bool
        ``score`` is under the threshold the caller gave.

    ``probability`` is the calibrated estimate (:func:`calibrated`) that the evidence holds the
    answer.
    """

    score: float
    best_item: float
    top_items: float
    missing: tuple[str, ...] = field(default=())
    low: bool = False

    @property
    def probability(self) -> float:
        return calibrated(self.score)

    def trace_data(self) -> dict:
        """What the trace records (``confidence`` step)."""
        return {"score": self.score, "probability": self.probability, "best_item": self.best_item,
                "top_items": self.top_items,
                "missing": list(self.missing), "low": self.low}


def _evidence_text(ev: Evidence) -> str:
    return " ".join(ev.path) + "\n" + ev.text


def retrieval_confidence(question: str, evidence: Sequence[Evidence], threshold: float) -> Confidence:
    """Score how well ``evidence`` (best first) covers ``question``.

    Parameters
    ----------
    question : str
    evidence : sequence of Evidence
        Ranked evidence; only the first ``TOP_EVIDENCE`` items count.
    threshold : float
        ``low`` is set when the score is below it (0 disables corrective answers).

    Returns
    -------
    Confidence
    """
    qterms = terms(question)
    top = list(evidence[:TOP_EVIDENCE])
    if not top:
        return Confidence(0.0, 0.0, 0.0, tuple(qterms), low=threshold > 0)
    if not qterms:      # nothing to check (a question of stop words only): trust retrieval
        return Confidence(1.0, 1.0, 1.0, (), low=False)
    texts = [_evidence_text(ev) for ev in top]
    best = max(overlap(qterms, t) for t in texts)
    missing = missing_terms(qterms, texts)
    together = 1.0 - len(missing) / len(qterms)
    score = round(0.5 * (best + together), 4)
    return Confidence(score, round(best, 4), round(together, 4), tuple(missing), low=score < threshold)


def clarification(question: str, confidence: Confidence, evidence: Sequence[Evidence]) -> str:
    """The corrective answer: what is missing, the closest sections (cited), a question back."""
    parts = [f"I could not find enough in the documentation you can access to answer this "
             f"reliably (retrieval confidence {confidence.score:.2f})."]
    if confidence.missing:
        parts.append("The documents found do not mention: " + ", ".join(confidence.missing) + ".")
    if evidence:
        near = "; ".join(f"{' > '.join(ev.path[-2:]) or ev.title} [{n}]"
                         for n, ev in enumerate(evidence[:CLOSEST], 1))
        parts.append(f"The closest sections are: {near}.")
    parts.append("Could you rephrase the question or add detail, for example the product, "
                 "version or section you mean?")
    return " ".join(parts)
