"""Ragas-style LLM metrics against the scripted OpenAI-compatible server."""
from __future__ import annotations

import json

from schemas.config import LLMConfig
from vdgr_core.eval.llm_judge import average_precision, judge
from vdgr_core.llm.client import LLMClient


def test_average_precision():
    assert average_precision([True, False, True]) == (1 + 2 / 3) / 2
    assert average_precision([False, False]) is None


def test_judge_computes_each_metric_from_structured_verdicts(openai_server):
    def responder(req):
        system = req["messages"][0]["content"]
        user = req["messages"][1]["content"]
        if "atomic factual claims" in system and "Hold RESET" in user and "<<<TEXT" in user:
            if "reference-marker" in user:
                return json.dumps({"claims": ["a", "b"], "supported": [True, True]})
            return json.dumps({"claims": ["a", "b", "c", "d"], "supported": [True, True, True, False]})
        if "Rate from 0 to 1" in system:
            return json.dumps({"relevance": 0.9})
        if "useful to answer" in system:
            return json.dumps({"relevant": [False, True]})
        return "{}"

    openai_server.responder = responder
    llm = LLMClient(LLMConfig(base_url=openai_server.url, model="judge"))
    scores = judge(llm, "How do I reset?", "Hold RESET for ten seconds.",
                   ["Battery text.", "Hold RESET for ten seconds."],
                   reference="reference-marker: hold reset")
    assert scores.faithfulness == 0.75
    assert scores.answer_relevance == 0.9
    assert scores.context_precision == 0.5
    assert scores.context_recall == 1.0
    assert llm.usage()["eval_judge"].calls == 4
    contexts_sent = [r for r in openai_server.requests if "useful to answer" in r["messages"][0]["content"]]
    assert "<<<CONTEXT_1" in contexts_sent[0]["messages"][1]["content"]
