"""OpenAI-compatible chat completions over the knowledge base (model ``vdgr``).

The last user message is the question. The reply's text is the answer with ``[n]`` citations;
the evidence (the DESIGN.md evidence objects), the routing and the trace travel in extra
top-level fields (``evidence``, ``routing``, ``trace``) of the completion, or of the last chunk
of a stream. Clients that know nothing of them (the ``openai`` SDK, chat front-ends) ignore
them; the SDK exposes them through ``model_extra``.

With an LLM configured, a streamed answer is generated as a stream and checked sentence by
sentence on its way out (:class:`vdgr_core.query.stream_check.StreamChecker`); before that the
retrieval confidence decides between a corrective answer and the LLM call, and the evidence is
compressed to the token budget. Without an LLM the (extractive) answer is sent as it is.
"""
from __future__ import annotations

import json
import time
from typing import Any, Iterator, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.errors import LLMError
from vdgr_core.llm.client import StageUsage
from vdgr_core.query.answer import NO_ANSWER, answer_messages, extractive_answer
from vdgr_core.query.compress import compress_evidence
from vdgr_core.query.confidence import clarification, retrieval_confidence
from vdgr_core.query.guardrails import screen_answer
from vdgr_core.query.result import QueryResult, TraceStep
from vdgr_core.query.stream_check import StreamChecker

MODEL = "vdgr"
STREAM_STAGE = "answer_stream"
QUESTION_MAX = 4000          # characters of a question, on /v1/query and the chat endpoint

#: the parameters of OpenAI's chat completions request that VDGR accepts and ignores (the
#: openai SDK's ``CompletionCreateParams``; a test keeps the list in step with the SDK), and
#: ``groups``, which the chat endpoint ignores: groups come from the credential
IGNORED_CHAT_FIELDS = frozenset({
    "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "moderation", "n",
    "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
    "prompt_cache_options", "prompt_cache_retention", "reasoning_effort", "response_format",
    "safety_identifier", "seed", "service_tier", "stop", "store", "stream_options", "temperature",
    "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
    "groups",
})
#: the fields of an OpenAI chat message besides ``role`` and ``content``, accepted and ignored
IGNORED_MESSAGE_FIELDS = frozenset({"name", "tool_calls", "tool_call_id", "function_call", "refusal", "audio"})


def _without(data: Any, ignored: frozenset) -> Any:
    if isinstance(data, dict):
        return {k: v for k, v in data.items() if k not in ignored}
    return data


class ChatMessage(BaseModel):
    """One message of a chat request.

    Strict: an unknown role or field is refused; the other fields of OpenAI's messages
    (:data:`IGNORED_MESSAGE_FIELDS`) are accepted and dropped.
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Union[str, list[dict[str, Any]], None] = None

    _drop = model_validator(mode="before")(classmethod(lambda cls, data: _without(data, IGNORED_MESSAGE_FIELDS)))

    def text(self) -> str:
        """The message's text (the text parts of a list of content parts)."""
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):       # content parts: keep the text ones
            return "\n".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return ""


class ChatRequest(BaseModel):
    """An OpenAI chat completions request, as VDGR reads it.

    ``model``, ``messages`` and ``stream`` are read; ``domain``, ``version`` and ``k`` are VDGR
    extensions (``extra_body`` in the openai SDK); the other OpenAI parameters
    (:data:`IGNORED_CHAT_FIELDS`) are accepted and dropped. Strict: no type coercion
    (``stream: "yes"``, ``k: "5"`` are refused) and any other field is refused.
    """

    model_config = ConfigDict(extra="forbid", strict=True)
    model: str = Field(max_length=256)
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    domain: Optional[str] = Field(default=None, max_length=256)
    version: Optional[str] = Field(default=None, max_length=128)
    k: Optional[int] = Field(default=None, ge=1, le=50)

    _drop = model_validator(mode="before")(classmethod(lambda cls, data: _without(data, IGNORED_CHAT_FIELDS)))

    def question(self) -> str:
        """The last user message's text, trimmed.

        Raises
        ------
        ValueError
            No user message with text.
        """
        for m in reversed(self.messages):
            if m.role == "user" and m.text().strip():
                return m.text().strip()
        raise ValueError("messages: no user message with text (the last user message is the question)")


def completion_body(result: QueryResult, created: int) -> dict:
    """A ``chat.completion`` with the evidence in extra fields."""
    return {
        "id": f"chatcmpl-{result.id}", "object": "chat.completion", "created": created, "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": result.answer},
                     "finish_reason": "stop"}],
        **extras(result),
    }


def extras(result: QueryResult) -> dict:
    d = result.model_dump(mode="json")
    return {"evidence": d["evidence"], "routing": d["routing"], "trace": d["trace"]}


def _chunk(result_id: str, created: int, delta: dict, finish: Optional[str] = None, **extra) -> str:
    body = {"id": f"chatcmpl-{result_id}", "object": "chat.completion.chunk", "created": created,
            "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"


def sse_events(result: QueryResult, pieces: Iterator[str], created: int,
               on_done=None) -> Iterator[str]:
    """The SSE events of a streamed completion: role, content pieces, the final chunk, [DONE].

    The final chunk is built after ``pieces`` is exhausted, so it carries the finished answer's
    trace (stream check, LLM usage).
    """
    yield _chunk(result.id, created, {"role": "assistant", "content": ""})
    for piece in pieces:
        if piece:
            yield _chunk(result.id, created, {"content": piece})
    if on_done:
        on_done()
    yield _chunk(result.id, created, {}, "stop", **extras(result))
    yield "data: [DONE]\n\n"


def _step(result: QueryResult, stage: str, message: str, **data) -> None:
    result.trace.steps.append(TraceStep(stage=stage, message=message, data=data))


def checked_llm_stream(result: QueryResult, snap, metrics) -> Iterator[str]:
    """The answer to ``result`` (retrieved without an answer) streamed from the LLM, checked.

    Fills ``result.answer`` with what was sent, and adds the confidence, compression, stream
    check and LLM usage to ``result.trace``.
    """
    cfg = snap.kb.config
    question, evidence = result.question, result.evidence
    t0 = time.perf_counter()
    conf = retrieval_confidence(question, evidence, cfg.min_confidence)
    _step(result, "confidence", "low: asking for clarification" if conf.low else "ok", **conf.trace_data())
    if conf.low or not evidence:
        result.answer = clarification(question, conf, evidence) if evidence else NO_ANSWER
        yield result.answer
        return
    ctx = compress_evidence(question, evidence, cfg.context_budget_tokens)
    _step(result, "compress", "evidence compressed for the LLM", **ctx.trace_data())
    checker = StreamChecker([e.text for e in evidence], min_support=cfg.guardrails.min_support)
    usage = StageUsage()
    sent: list[str] = []
    try:
        for delta in snap.answer_llm.chat_stream(STREAM_STAGE, answer_messages(question, ctx.evidence),
                                                 usage_out=usage):
            out = checker.feed(delta)
            if out:
                sent.append(out)
                yield out
    except LLMError as exc:
        _step(result, "answer", "LLM answer stream failed", error=str(exc)[:200])
        if not sent:     # nothing shown yet: the extractive answer, screened, instead
            checker = None
            text = screen_answer(extractive_answer(question, evidence), [e.text for e in evidence],
                                 min_support=cfg.guardrails.min_support).answer
            sent.append(text)
            yield text
    if checker is not None:
        tail = checker.finish()
        if tail:
            sent.append(tail)
            yield tail
        _step(result, "guardrails", "answer stream checked sentence by sentence", **checker.report.trace_data())
    result.answer = "".join(sent).strip()
    result.trace.llm_calls += usage.calls
    result.trace.tokens += usage.prompt_tokens + usage.completion_tokens
    result.trace.timings_ms["answer_stream"] = round((time.perf_counter() - t0) * 1000.0, 3)
    if metrics is not None:
        metrics.add_llm_usage({}, {STREAM_STAGE: usage})

