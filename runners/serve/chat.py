"""OpenAI-compatible chat completions over the knowledge base (model ``vdgr``).

The last user message is the question. The reply's text is the answer with ``[n]`` citations;
the evidence (the DESIGN.md evidence objects), the routing, the trace and the answer's
citations travel in extra top-level fields (``evidence``, ``routing``, ``trace``,
``citations``) of the completion, or of the last chunk of a stream. A stream also sends the
evidence and the routing in its first chunk (the ``role`` delta), before any answer text and
before the LLM is asked, so a client can show the passages while the answer is written.
Clients that know nothing of them (the ``openai`` SDK, chat front-ends) ignore them; the SDK
exposes them through ``model_extra``.

A streamed answer comes from the same answer stage as every other answer
(:class:`vdgr_core.query.answer_stage.AnswerStage`): the retrieval confidence decides between a
corrective answer and the LLM call, the evidence is compressed to the token budget, and with an
LLM configured the answer is generated as a stream and checked sentence by sentence on its way
out (one screen: guardrails, phone regions, stream check); without one the extractive answer
is sent, screened the same way.
"""
from __future__ import annotations

import json
import time
from typing import Any, Iterator, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vdgr_core.llm.client import StageUsage
from vdgr_core.query.answer_stage import STREAM_STAGE
from vdgr_core.query.result import QueryResult

MODEL = "vdgr"
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
    """The extra top-level fields of a completion: evidence, routing, trace, citations."""
    d = result.model_dump(mode="json")
    return {"evidence": d["evidence"], "routing": d["routing"], "trace": d["trace"],
            "citations": d["citations"]}


def retrieved_extras(result: QueryResult) -> dict:
    """What is known of ``result`` before its answer: the evidence and the routing (a stream's
    first chunk)."""
    d = result.model_dump(mode="json", include={"evidence", "routing"})
    return {"evidence": d["evidence"], "routing": d["routing"]}


def _chunk(result_id: str, created: int, delta: dict, finish: Optional[str] = None, **extra) -> str:
    body = {"id": f"chatcmpl-{result_id}", "object": "chat.completion.chunk", "created": created,
            "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return "data: " + json.dumps(body, ensure_ascii=False) + "\n\n"


def sse_events(result: QueryResult, pieces: Iterator[str], created: int,
               on_done=None) -> Iterator[str]:
    """The SSE events of a streamed completion: role, content pieces, the final chunk, [DONE].

    The first chunk (the ``role`` delta) carries the evidence and the routing: it is sent
    before ``pieces`` is first drawn, so before the LLM is asked, whether an LLM or the
    extractive answer writes the text. The final chunk is built after ``pieces`` is exhausted,
    so it carries the finished answer's trace (stream check, LLM usage) and citations, with the
    evidence and the routing again (one chunk holds all a client that reads only the last needs).
    """
    yield _chunk(result.id, created, {"role": "assistant", "content": ""}, **retrieved_extras(result))
    for piece in pieces:
        if piece:
            yield _chunk(result.id, created, {"content": piece})
    if on_done:
        on_done()
    yield _chunk(result.id, created, {}, "stop", **extras(result))
    yield "data: [DONE]\n\n"


def streamed_answer(result: QueryResult, snap, metrics) -> Iterator[str]:
    """The answer to ``result`` (retrieved without an answer), streamed.

    The knowledge base's one answer stage (:meth:`KnowledgeBase.answer_pieces`) produces it:
    from the snapshot's own LLM client as a checked stream when one is configured, else the
    extractive answer; the same confidence, compression and screen as ``/v1/query``. Fills
    ``result.answer`` with what was sent and adds the LLM usage and the stream's time to
    ``result.trace``.
    """
    t0 = time.perf_counter()
    usage = StageUsage()
    llm = snap.answer_llm
    yield from snap.kb.answer_pieces(result, llm=llm, stream=True, usage_out=usage)
    result.trace.llm_calls += usage.calls
    result.trace.tokens += usage.prompt_tokens + usage.completion_tokens
    result.trace.timings_ms[STREAM_STAGE] = round((time.perf_counter() - t0) * 1000.0, 3)
    if metrics is not None and llm is not None:
        metrics.add_llm_usage({}, {STREAM_STAGE: usage})
