"""Dynamic reflection: judge whether the evidence suffices, name the gap, refine the query.

Offline, sufficiency is the fraction of the question's content words covered by the top
evidence (title path and text); a refined query adds the missing words and the strongest
co-occurrence neighbours of the question's entities. With an LLM the judgement is a structured
``{sufficient, gap, refined_query}`` reply; failures fall back to the offline judgement.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field

from schemas.errors import LLMError
from vdgr_core.query.view import IndexView
from vdgr_core.query.fusion import SectionHit
import re

from vdgr_core.query.textutil import missing_terms, overlap, terms

SUFFICIENT_COVERAGE = 0.75
TOP_EVIDENCE = 5
BRIDGE_SECTIONS = 1     # bridge entities come from the best sentence of the first section
BRIDGE_ENTITIES = 3     # the most specific entities the question does not name


class SufficiencyReply(BaseModel):
    """What the LLM judge returns."""

    model_config = ConfigDict(extra="forbid")
    sufficient: bool
    gap: str = Field(default="", max_length=1000)
    refined_query: str = Field(default="", max_length=1000)


@dataclass(frozen=True)
class Judgement:
    sufficient: bool
    coverage: float
    margin: float
    missing: tuple[str, ...]
    gap: str = ""
    refined_query: str = ""
    by: str = "offline"


def row_text(data: IndexView, row: int) -> str:
    """A chunk's words as evidence: its title path and text."""
    c = data.contents
    return " ".join(c.path[row]) + "\n" + c.text[row]


def evidence_text(data: IndexView, hit: SectionHit) -> str:
    """What counts as a section's words: its title path and matched chunks."""
    c = data.contents
    return " ".join(c.path[hit.row]) + "\n" + "\n".join(c.text[r] for r in hit.rows[:4])


def judge_offline(question: str, evidence: Sequence[SectionHit], data: IndexView) -> Judgement:
    """Coverage of the question's content words by the top evidence, plus the score margin."""
    qterms = terms(question)
    top = evidence[:TOP_EVIDENCE]
    if not top:
        return Judgement(False, 0.0, 0.0, tuple(qterms), gap="no evidence")
    missing = missing_terms(qterms, [evidence_text(data, f) for f in top])
    coverage = 1.0 - len(missing) / len(qterms) if qterms else 1.0
    s1 = top[0].score
    s2 = top[1].score if len(top) > 1 else 0.0
    margin = (s1 - s2) / s1 if s1 > 0 else 0.0
    sufficient = coverage >= SUFFICIENT_COVERAGE
    gap = "" if sufficient else "evidence does not mention: " + ", ".join(missing)
    return Judgement(sufficient, round(coverage, 4), round(margin, 4), tuple(missing), gap=gap)


def judge(question: str, evidence: Sequence[SectionHit], data: IndexView, llm=None,
          stage: str = "reflect") -> Judgement:
    """Judge sufficiency (LLM when given, else offline; the LLM falling back to offline)."""
    offline = judge_offline(question, evidence, data)
    if llm is None or not evidence:
        return offline
    from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

    blocks = "\n".join(f"[{n}] {wrap_untrusted(evidence_text(data, f)[:1500], 'EVIDENCE')}"
                       for n, f in enumerate(evidence[:TOP_EVIDENCE], 1))
    system = ("Judge whether the evidence is sufficient to answer the question. If not, name the "
              "missing information (gap) and write a refined search query for it. Reply in JSON. "
              + UNTRUSTED_NOTICE)
    user = f"Question:\n{wrap_untrusted(question, 'QUESTION')}\n\nEvidence:\n{blocks}"
    try:
        r = llm.structured(stage, [{"role": "system", "content": system},
                                   {"role": "user", "content": user}], SufficiencyReply)
    except LLMError:
        return offline
    return Judgement(r.sufficient, offline.coverage, offline.margin, offline.missing,
                     gap=r.gap, refined_query=r.refined_query.strip(), by="llm")


def refine_offline(question: str, judgement: Judgement, expansions: Sequence[str]) -> Optional[str]:
    """The question plus its missing words and entity expansions; None if nothing is new."""
    have = set(terms(question))
    extra = list(judgement.missing)
    for name in expansions:
        if not set(terms(name)) <= have and name not in extra:
            extra.append(name)
    if not extra:
        return None
    return question.strip() + " " + " ".join(extra)


def bridge_query(question: str, entity_names: Sequence[str]) -> Optional[str]:
    """A follow-up query from bridge entities: the first :data:`BRIDGE_ENTITIES` names (most
    specific first) that add a word the question lacks, after the question (IRCoT's next step
    without an LLM: the evidence names what the question needs next). None when none is new.
    """
    have = set(terms(question))
    picked: list[str] = []
    for name in entity_names:
        words = set(terms(name))
        if words and not words <= have and name not in picked:
            picked.append(name)
            have |= words
        if len(picked) >= BRIDGE_ENTITIES:
            break
    if not picked:
        return None
    return question.strip() + " " + " ".join(picked)


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def best_sentence(question: str, texts: Sequence[str]) -> str:
    """The sentence of ``texts`` sharing most of the question's words (first on ties): the
    place where the evidence answers the first hop and names the bridge."""
    q = terms(question)
    best, best_score = "", 0.0
    for text in texts:
        for sent in _SENTENCE.split(text):
            sc = overlap(q, sent)
            if sc > best_score:
                best, best_score = sent, sc
    return best
