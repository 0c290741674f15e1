"""The answer stage: the answer to a question from its evidence, screened.

The retrieval confidence (:mod:`vdgr_core.query.confidence`) decides first: low confidence
gives the corrective answer. With an LLM the evidence is compressed to the token budget and
the LLM answers; a failure falls back to the extractive answer, as does having no LLM. The
answer screen (:func:`vdgr_core.query.guardrails.screen_answer`) redacts credentials and
personal data the evidence lacks and reports unsupported sentences in the trace.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from schemas.config import AnswerSettings
from schemas.errors import LLMError
from vdgr_core.query.answer import extractive_answer, llm_answer
from vdgr_core.query.compress import compress_evidence
from vdgr_core.query.confidence import clarification, retrieval_confidence
from vdgr_core.query.guardrails import screen_answer
from vdgr_core.query.result import Evidence


class AnswerStage:
    """Answers from evidence (see the module docstring).

    Parameters
    ----------
    settings : AnswerSettings
    llm : LLMClient, optional
    """

    def __init__(self, settings: AnswerSettings, llm: Optional[Any] = None):
        self.settings = settings
        self.llm = llm

    def answer(self, question: str, evidence: Sequence[Evidence], trace) -> str:
        """The screened answer to ``question`` from ``evidence`` (best first)."""
        s = self.settings
        answer = self._answer(question, evidence, trace)
        if s.screen:
            checked = screen_answer(answer, [e.text for e in evidence], min_support=s.min_support,
                                    phone_regions=s.phone_regions)
            if checked.redactions or checked.unsupported:
                trace.step("guardrails", "answer screened", redacted=list(checked.redactions),
                           unsupported=list(checked.unsupported))
            answer = checked.answer
        return answer

    def _answer(self, question, evidence, trace) -> str:
        conf = retrieval_confidence(question, evidence, self.settings.min_confidence)
        trace.step("confidence", "low: asking for clarification" if conf.low else "ok", **conf.trace_data())
        if conf.low and evidence:
            return clarification(question, conf, evidence)
        if self.llm is not None and evidence:
            ctx = compress_evidence(question, evidence, self.settings.context_budget_tokens)
            trace.step("compress", "evidence compressed for the LLM", **ctx.trace_data())
            try:
                return llm_answer(self.llm, question, ctx.evidence)
            except LLMError as exc:
                trace.step("answer", "LLM answer failed: extractive answer used", error=str(exc)[:200])
        return extractive_answer(question, evidence)
