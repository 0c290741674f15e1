"""POST /v1/chat/completions with the official openai client, offline and with a scripted LLM."""
from __future__ import annotations

import json
import re
import threading

import openai
import pytest

from tests.support.live_server import HR, STAFF
from tests.support.tiny_index import SECRET_TITLE, SECRET_WORD
from vdgr_core.query.stream_check import WITHHELD

LEAVE_Q = "How many days of annual leave do employees get?"


def _client(live, key=STAFF):
    return openai.OpenAI(base_url=live.url + "/v1", api_key=key, max_retries=0)


def test_openai_client_non_streamed(live):
    client = _client(live)
    assert [m.id for m in client.models.list().data] == ["vdgr"]
    resp = client.chat.completions.create(model="vdgr", messages=[
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Tell me about the Galaxy S10 battery."},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": LEAVE_Q}])
    text = resp.choices[0].message.content
    assert "25 days" in text and "[1]" in text           # the last user message was asked
    evidence = resp.model_extra["evidence"]
    assert evidence and evidence[0]["path"][-1] == "Annual leave"
    assert resp.model_extra["routing"][0]["domain"] == "HR_Policies"


def test_openai_client_streamed(live):
    stream = _client(live).chat.completions.create(
        model="vdgr", stream=True, messages=[{"role": "user", "content": LEAVE_Q}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "25 days" in text and "[1]" in text
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["evidence"][0]["path"][-1] == "Annual leave"


def test_chat_groups_come_from_the_key_and_errors(live):
    q = f"What does {SECRET_WORD} band E5 pay?"
    for key, sees in ((STAFF, False), (HR, True)):
        resp = _client(live, key).chat.completions.create(
            model="vdgr", messages=[{"role": "user", "content": q}], extra_body={"groups": ["hr"]})
        assert any(SECRET_TITLE in e["path"] for e in resp.model_extra["evidence"]) is sees
    with pytest.raises(openai.AuthenticationError):
        _client(live, "no-such-key-0123456789").chat.completions.create(
            model="vdgr", messages=[{"role": "user", "content": q}])
    with pytest.raises(openai.BadRequestError, match="no user message"):
        _client(live).chat.completions.create(model="vdgr", messages=[{"role": "system", "content": "hi"}])
    with pytest.raises(openai.BadRequestError, match="not served"):
        _client(live).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": q}])


def test_low_confidence_asks_for_clarification_offline(live):
    resp = _client(live).chat.completions.create(
        model="vdgr", messages=[{"role": "user", "content": "What is the warranty period of the Zentrix 900 toaster?"}])
    text = resp.choices[0].message.content
    assert "could not find enough" in text and "zentrix" in text and text.rstrip().endswith("?")
    step = next(s for s in resp.model_extra["trace"]["steps"] if s["stage"] == "confidence")
    assert step["data"]["low"] is True and 0 <= step["data"]["score"] < 0.4


def _is_answer(request) -> bool:
    return not request.get("response_format")


def test_streamed_llm_answer_is_checked_before_it_leaves(llm_live, openai_server):
    """A failing sentence is withheld while the LLM is still generating the rest of the answer."""
    gate, holding = threading.Event(), threading.Event()
    good = "Employees get 25 days of annual leave [1]. "
    bad = "Quantum flux capacitors recalibrate nightly across orbital datacenters [1]. "
    after = "Request leave in the HR portal [1]."

    def respond(request):
        if not _is_answer(request):
            return json.dumps({"domain": "HR_Policies", "reason": ""})
        # the next sentence's first word marks the end of the bad one; then the LLM pauses
        return [good, bad, after[:7], lambda: (holding.set(), gate.wait(60)), after[7:]]

    openai_server.responder = respond
    events = llm_live.sse("/v1/chat/completions", {"model": "vdgr", "stream": True,
                                                   "messages": [{"role": "user", "content": LEAVE_Q}]}, STAFF)
    received = ""
    for ev in events:                      # read until the withheld sentence's placeholder
        received += ev["choices"][0]["delta"].get("content") or ""
        if WITHHELD in received:
            break
    # the LLM is still generating (held before its last words): what arrived was checked on the fly
    assert holding.wait(30) and not gate.is_set()
    assert received.startswith(good.strip()) and "Quantum" not in received and "portal" not in received
    gate.set()
    rest = list(events)
    received += "".join(ev["choices"][0]["delta"].get("content") or "" for ev in rest if ev["choices"])
    assert received.endswith(after) and "Quantum" not in received
    final = rest[-1]
    steps = {s["stage"]: s for s in final["trace"]["steps"]}
    assert steps["guardrails"]["data"]["withheld"] == [bad.strip()]
    assert "tokens_before" in steps["compress"]["data"]
    # the answer request was a stream, and its evidence was wrapped as untrusted data
    ans = [r for r in openai_server.chat_requests() if _is_answer(r)]
    assert len(ans) == 1 and ans[0]["stream"] is True
    assert "<<<EVIDENCE id=" in ans[0]["messages"][-1]["content"]
    assert final["trace"]["llm_calls"] == len(openai_server.chat_requests())
    _, _, metrics = llm_live.request("GET", "/metrics")
    assert 'vdgr_llm_calls_total{stage="answer_stream"} 1.0' in metrics


def _first_content_at(events: list[dict]) -> int:
    return next(i for i, ev in enumerate(events) if ev["choices"] and ev["choices"][0]["delta"].get("content"))


def test_streamed_llm_answer_sends_the_evidence_before_the_llm_writes(llm_live, openai_server):
    """The first chunk carries the evidence and the routing while the LLM has not sent a token."""
    gate, holding = threading.Event(), threading.Event()
    openai_server.responder = lambda r: (
        [lambda: (holding.set(), gate.wait(60)), "Employees get 25 days of annual leave [1]."]
        if _is_answer(r) else json.dumps({"domain": "HR_Policies", "reason": ""}))
    try:
        events = llm_live.sse("/v1/chat/completions", {"model": "vdgr", "stream": True,
                                                       "messages": [{"role": "user", "content": LEAVE_Q}]}, STAFF)
        first = next(events)
        # the answer request is held before its first token: the evidence came without it
        assert holding.wait(30) and not gate.is_set()
        assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert first["evidence"][0]["path"][-1] == "Annual leave"
        assert first["routing"][0]["domain"] == "HR_Policies"
        assert "citations" not in first and "trace" not in first
    finally:
        gate.set()
    rest = [first] + list(events)
    assert _first_content_at(rest) > 0
    assert "25 days" in "".join(ev["choices"][0]["delta"].get("content") or "" for ev in rest if ev["choices"])
    final = rest[-1]
    assert final["choices"][0]["finish_reason"] == "stop"
    assert final["evidence"] == first["evidence"] and final["routing"] == first["routing"]
    assert final["citations"] and final["trace"]["llm_calls"] >= 1


def test_streamed_offline_answer_sends_the_evidence_first_too(live):
    events = list(live.sse("/v1/chat/completions", {"model": "vdgr", "stream": True,
                                                     "messages": [{"role": "user", "content": LEAVE_Q}]}, STAFF))
    first, final = events[0], events[-1]
    assert _first_content_at(events) > 0
    assert first["evidence"][0]["path"][-1] == "Annual leave" and first["routing"][0]["domain"] == "HR_Policies"
    assert final["evidence"] == first["evidence"] and final["routing"] == first["routing"]


def test_streamed_llm_answer_redacts_secrets(llm_live, openai_server):
    openai_server.responder = lambda r: (
        ["Employees get 25 days of annual leave [1]. Request leave in the HR portal, password: hunter2", " [1]."]
        if _is_answer(r) else json.dumps({"domain": "HR_Policies", "reason": ""}))
    stream = _client(llm_live).chat.completions.create(
        model="vdgr", stream=True, messages=[{"role": "user", "content": LEAVE_Q}])
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert "hunter2" not in text and "[REDACTED:password]" in text


def test_low_confidence_skips_the_llm(llm_live, openai_server):
    openai_server.responder = lambda r: "An invented answer [1]." if _is_answer(r) else json.dumps(
        {"domain": "HR_Policies", "reason": ""})
    stream = _client(llm_live).chat.completions.create(
        model="vdgr", stream=True,
        messages=[{"role": "user", "content": "What is the warranty period of the Zentrix 900 toaster?"}])
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert "could not find enough" in text and "invented" not in text
    assert not [r for r in openai_server.chat_requests() if _is_answer(r)]


def _streamed_text(live, question: str) -> str:
    events = live.sse("/v1/chat/completions", {"model": "vdgr", "stream": True,
                                                "messages": [{"role": "user", "content": question}]}, STAFF)
    return "".join(ev["choices"][0]["delta"].get("content") or "" for ev in events if ev["choices"]).strip()


@pytest.mark.parametrize("question", [LEAVE_Q, "What is the warranty period of the Zentrix 900 toaster?"])
def test_query_chat_and_stream_answer_alike_offline(live, question):
    """/v1/query, a chat completion and a streamed one run the same stages: the same text."""
    status, _, body = live.request("POST", "/v1/query", {"question": question}, STAFF)
    assert status == 200
    answer = body["answer"]
    resp = _client(live).chat.completions.create(model="vdgr", messages=[{"role": "user", "content": question}])
    assert resp.choices[0].message.content == answer == _streamed_text(live, question)


def test_llm_answer_and_its_stream_are_screened_alike(llm_live, openai_server):
    reply = ("Employees get 25 days of annual leave [1]. "
             "Quantum flux capacitors recalibrate nightly across orbital datacenters [1]. "
             "Request leave in the HR portal or call 030 901820, password: hunter2 [1].")
    openai_server.responder = lambda r: reply if _is_answer(r) else json.dumps({"domain": "HR_Policies", "reason": ""})
    whole = _client(llm_live).chat.completions.create(
        model="vdgr", messages=[{"role": "user", "content": LEAVE_Q}]).choices[0].message.content
    streamed = _streamed_text(llm_live, LEAVE_Q)
    assert whole == streamed
    assert "25 days" in whole and WITHHELD in whole and "hunter2" not in whole and "901820" not in whole


def test_document_text_cannot_forge_the_json_or_streamed_answer(forged_live):
    q = "When are expense reports filed?"
    status, _, body = forged_live.request("POST", "/v1/query", {"question": q}, STAFF)
    assert status == 200 and "14 days ahead" in body["answer"]
    streamed = _streamed_text(forged_live, q)
    assert streamed == body["answer"]
    n = len(body["evidence"])
    for text in (body["answer"], streamed):
        assert "<|im_start|>" not in text and "<img" not in text and "[99]" not in text
        assert all(1 <= int(c) <= n for c in re.findall(r"\[(\d+)\]", text))
