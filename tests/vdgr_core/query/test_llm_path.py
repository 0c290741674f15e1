"""The LLM path against the scripted local OpenAI-compatible server."""
import json

import pytest

from schemas.config import LLMConfig
from tests.vdgr_core.query.conftest import config
from vdgr_core.llm.client import LLMClient
from vdgr_core.query.knowledge_base import KnowledgeBase

ANSWER = "Wireless PowerShare charges another device [1]."


def _schema_name(request) -> str:
    fmt = request.get("response_format") or {}
    return (fmt.get("json_schema") or {}).get("name", "")


def _responder(domain_reply, reflect=None):
    def respond(request):
        name = _schema_name(request)
        if name == "DomainChoice":
            return domain_reply
        if name == "TocSelection":
            return json.dumps({"labels": ["D1", "D2"]})
        if name == "SufficiencyReply":
            return reflect(request) if reflect else json.dumps(
                {"sufficient": True, "gap": "", "refined_query": ""})
        if name:
            return "{}"
        return ANSWER
    return respond


@pytest.fixture
def llm_kb(tiny_index, openai_server):
    def _open(**kw):
        llm = LLMClient(LLMConfig(base_url=openai_server.url, model="test", max_retries=0, backoff_s=0))
        return KnowledgeBase.open(tiny_index, config(**kw), llm=llm)
    return _open


def test_llm_router_answer_and_call_count(llm_kb, openai_server):
    openai_server.responder = _responder(json.dumps({"domain": "Galaxy_S10", "reason": "named"}))
    kb = llm_kb(routes=("hybrid", "toc", "graph"))
    r = kb.query("How does Wireless PowerShare work on the Galaxy S10?")
    assert [d.domain for d in r.routing] == ["Galaxy_S10"]
    assert r.answer == ANSWER
    names = [_schema_name(q) for q in openai_server.chat_requests()]
    assert "DomainChoice" in names and "TocSelection" in names and "" in names
    assert r.trace.llm_calls == len(openai_server.chat_requests()) > 0
    assert r.trace.tokens == 15 * r.trace.llm_calls
    # the router's schema constrains the label to the real domain names
    req = next(q for q in openai_server.chat_requests() if _schema_name(q) == "DomainChoice")
    enum = req["response_format"]["json_schema"]["schema"]["properties"]["domain"]["enum"]
    assert sorted(enum) == ["Galaxy_S10", "Galaxy_S10e", "HR_Policies"]
    # evidence is wrapped as untrusted data in the answer prompt
    ans = next(q for q in openai_server.chat_requests() if not _schema_name(q))
    assert "<<<EVIDENCE id=" in ans["messages"][-1]["content"]


@pytest.mark.parametrize("reply", [
    json.dumps({"domain": "Galaxy_S99", "reason": "made up"}),   # out-of-set label
    "this is not json {",                                         # malformed
])
def test_bad_router_reply_falls_back_to_offline(llm_kb, openai_server, reply):
    openai_server.responder = _responder(reply)
    r = llm_kb().query("Where is the fingerprint sensor on the Galaxy S10e?")
    assert r.routing[0].domain == "Galaxy_S10e"
    assert any(s.stage == "routing" and "failed" in s.message for s in r.trace.steps)
    assert all(e.domain in {d.domain for d in r.routing} for e in r.evidence)


def test_llm_reflection_rounds_bounded_and_counted(llm_kb, openai_server):
    counter = {"n": 0}

    def reflect(_request):
        counter["n"] += 1
        return json.dumps({"sufficient": False, "gap": "more", "refined_query": f"battery try {counter['n']}"})

    openai_server.responder = _responder(json.dumps({"domain": "Galaxy_S10", "reason": ""}), reflect)
    r = llm_kb(reflection=True, reflection_rounds=2, backtrack=False, routes=("hybrid",)).query("Galaxy S10 battery")
    steps = [s for s in r.trace.steps if s.stage == "reflection"]
    assert len(steps) == 2 and counter["n"] == 2
    assert all(s.data["by"] == "llm" for s in steps)
    assert r.trace.llm_calls == len(openai_server.chat_requests())


def test_llm_failures_fall_back_everywhere(llm_kb, openai_server):
    openai_server.responder = lambda request: (400, "bad request")
    r = llm_kb().query("How many days of annual leave?")
    assert r.evidence and r.routing[0].domain == "HR_Policies"
    assert "[1]" in r.answer      # the extractive answer
    assert any(s.stage == "answer" and "failed" in s.message for s in r.trace.steps)


def test_llm_reranker(llm_kb, openai_server):
    def respond(request):
        if _schema_name(request) == "RerankScores":
            # score the last candidate highest
            text = request["messages"][-1]["content"]
            n = text.count("<<<PASSAGE id=")
            return json.dumps({"scores": [{"label": f"C{i + 1}", "score": float(i)} for i in range(n)]})
        return _responder(json.dumps({"domain": "Galaxy_S10", "reason": ""}))(request)

    openai_server.responder = respond
    from schemas.config import RerankerConfig
    kb = llm_kb(routes=("hybrid",), reranker=RerankerConfig(kind="llm", top_n=5), backtrack=False,
                reflection=False)
    base = KnowledgeBase.open(kb.reader.index_dir, config(routes=("hybrid",), backtrack=False,
                                                          reflection=False))
    q = "Galaxy S10 battery"
    r = kb.query(q, domain="Galaxy_S10", k=5)
    plain = base.query(q, domain="Galaxy_S10", k=5)
    assert [e.chunk_id for e in r.evidence] == [e.chunk_id for e in plain.evidence][::-1]
