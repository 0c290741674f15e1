"""The answer stage: one generator of answer pieces, for the batch answer and the stream.

:meth:`AnswerStage.pieces` decides what answers a question from its evidence and yields the
answer as it may be shown, piece by piece:

1. the retrieval confidence (:mod:`vdgr_core.query.confidence`): no evidence gives
   :data:`vdgr_core.query.answer.NO_ANSWER`, low confidence the corrective answer;
2. with an LLM, the evidence compressed to the token budget and the LLM's answer, one reply
   (batch) or a stream of deltas; a failure before anything was shown falls back to
3. the extractive answer.

The evidence is made inert first (:mod:`vdgr_core.query.neutral`): its bracketed numbers
cannot pose as citations, its chat-template tokens and markup cannot reach the answer; an LLM's
text loses any citation of an evidence item that does not exist. Citations are written only
here. Everything passes one screen (:class:`vdgr_core.query.stream_check.StreamChecker`, with the
configured minimum support and phone regions): LLM text is released sentence by sentence once
checked (credentials and personal data the evidence lacks redacted, unsupported sentences
withheld); text the stage writes itself (extractive, corrective) has its credentials and
personal data redacted and unsupported sentences reported. ``KnowledgeBase.query`` joins the
pieces; the chat endpoint streams them, so the two cannot drift apart.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence

from schemas.config import AnswerSettings
from schemas.errors import LLMError
from vdgr_core.query.answer import NO_ANSWER, answer_messages, extractive_answer, llm_answer
from vdgr_core.query.compress import compress_evidence
from vdgr_core.query.confidence import clarification, retrieval_confidence
from vdgr_core.query.neutral import clean_generated, neutral_evidence
from vdgr_core.query.result import Evidence
from vdgr_core.query.stream_check import StreamChecker

STREAM_STAGE = "answer_stream"   # LLM usage bucket of a streamed answer (a batch one: "answer")
_DEFAULT = object()


class _Unscreened:
    """The screen's interface when ``AnswerSettings.screen`` is off: text passes as it is."""

    report = None

    def own(self, text: str) -> str:
        return text

    def feed(self, delta: str) -> str:
        return delta

    def finish(self) -> str:
        return ""


class AnswerStage:
    """Answers from evidence (see the module docstring).

    Parameters
    ----------
    settings : AnswerSettings
        Corrective threshold, LLM evidence budget, the screen's settings.
    llm : LLMClient, optional
        The default LLM of :meth:`pieces` (None: extractive answers).
    """

    def __init__(self, settings: AnswerSettings, llm: Optional[Any] = None):
        self.settings = settings
        self.llm = llm

    def screen(self, evidence: Sequence[Evidence]):
        """The one answer screen over ``evidence`` (a pass-through when screening is off)."""
        s = self.settings
        if not s.screen:
            return _Unscreened()
        return StreamChecker([e.text for e in evidence], min_support=s.min_support, phone_regions=s.phone_regions)

    def answer(self, question: str, evidence: Sequence[Evidence], trace) -> str:
        """The whole answer: :meth:`pieces` joined (one LLM reply, not a stream)."""
        return "".join(self.pieces(question, evidence, trace)).strip()

    def pieces(self, question: str, evidence: Sequence[Evidence], trace, *, llm: Any = _DEFAULT,
               stream: bool = False, usage_out=None) -> Iterator[str]:
        """Yield the screened answer to ``question`` from ``evidence``, piece by piece.

        Parameters
        ----------
        question : str
        evidence : sequence of Evidence
            Best first; citations ``[n]`` refer to this order.
        trace : object with ``step(stage, message, **data)``
            A :class:`vdgr_core.query.trace.TraceRecorder`, or a finished trace's
            :class:`vdgr_core.query.trace.StepLog`.
        llm : LLMClient or None, optional
            Overrides the stage's LLM (the chat endpoint's own client); None: extractive.
        stream : bool
            Ask the LLM for a stream of deltas (stage ``answer_stream``) instead of one reply.
        usage_out : StageUsage, optional
            Receives a stream's calls and tokens.
        """
        llm = self.llm if llm is _DEFAULT else llm
        s = self.settings
        evidence = neutral_evidence(evidence)
        conf = retrieval_confidence(question, evidence, s.min_confidence)
        trace.step("confidence", "low: asking for clarification" if conf.low else "ok", **conf.trace_data())
        if conf.low and evidence:
            yield from self._own(clarification(question, conf, evidence), evidence, trace)
            return
        if llm is not None and evidence:
            done = yield from self._generated(llm, question, evidence, trace, stream, usage_out)
            if done:
                return
        yield from self._own(extractive_answer(question, evidence) if evidence else NO_ANSWER, evidence, trace)

    def _own(self, text: str, evidence, trace) -> Iterator[str]:
        screen = self.screen(evidence)
        out = screen.own(text)
        rep = screen.report
        if rep is not None and (rep.redactions or rep.unsupported):
            trace.step("guardrails", "answer screened", redacted=sorted(set(rep.redactions)),
                       unsupported=list(rep.unsupported))
        yield out

    def _generated(self, llm, question, evidence, trace, stream: bool, usage_out):
        """Yield the LLM's answer through the screen; return False when nothing was shown
        and the extractive answer should be given instead."""
        ctx = compress_evidence(question, evidence, self.settings.context_budget_tokens)
        trace.step("compress", "evidence compressed for the LLM", **ctx.trace_data())
        screen = self.screen(evidence)
        shown, raw = False, []
        try:
            if stream:
                deltas = llm.chat_stream(STREAM_STAGE, answer_messages(question, ctx.evidence), usage_out=usage_out)
            else:
                deltas = iter([llm_answer(llm, question, ctx.evidence)])
            for delta in deltas:
                raw.append(delta)
                out = clean_generated(screen.feed(delta), len(evidence))
                if out:
                    shown = True
                    yield out
        except LLMError as exc:
            if not shown:
                trace.step("answer", "LLM answer failed: extractive answer used", error=str(exc)[:200])
                return False
            trace.step("answer", "LLM answer failed after part of it was sent", error=str(exc)[:200])
        if not shown and not "".join(raw).strip():
            trace.step("answer", "LLM answer empty: extractive answer used")
            return False
        tail = clean_generated(screen.finish(), len(evidence))
        if tail:
            yield tail
        if screen.report is not None:
            trace.step("guardrails", "answer checked sentence by sentence", **screen.report.trace_data())
        return True
