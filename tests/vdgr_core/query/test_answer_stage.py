"""One answer stage: the batch answer and the stream are the same pieces, through one screen."""
import pytest

from schemas.config import GuardrailConfig
from tests.support.scripted_llm import ScriptedLLM
from tests.vdgr_core.query.conftest import config
from vdgr_core.llm.client import StageUsage
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.query.stream_check import WITHHELD

LEAVE_Q = "How many days of annual leave do employees get?"


def _both(kb, question, llm, **kw):
    batch = kb.query(question, **kw)
    retrieved = kb.query(question, with_answer=False, **kw)
    pieces = list(kb.answer_pieces(retrieved, llm=llm, stream=True, usage_out=StageUsage()))
    return batch, retrieved, pieces


@pytest.mark.parametrize("question", [LEAVE_Q, "What is the warranty period of the Zentrix 900 toaster?",
                                      "Wireless PowerShare battery level"])
def test_offline_batch_and_stream_give_the_same_text(kb, question):
    batch, streamed, pieces = _both(kb, question, None)
    assert streamed.answer == "".join(pieces).strip() == batch.answer
    assert streamed.evidence == batch.evidence


def test_llm_batch_and_stream_give_the_same_screened_text(tiny_index):
    reply = ("Employees get 25 days of annual leave [1]. "
             "Quantum flux capacitors recalibrate nightly across orbital datacenters [1]. "
             "Request leave in the HR portal, password: hunter2 [1].")
    llm = ScriptedLLM(reply)
    kb = KnowledgeBase.open(tiny_index, config(routes=("hybrid",), min_confidence=0.0), llm=llm)
    batch, streamed, pieces = _both(kb, LEAVE_Q, llm)
    assert streamed.answer == batch.answer == "".join(pieces).strip()
    assert "25 days" in batch.answer and WITHHELD in batch.answer and "Quantum" not in batch.answer
    assert "hunter2" not in batch.answer and "[REDACTED:password]" in batch.answer
    assert llm.calls.count("answer") == 1 and llm.calls.count("answer_stream") == 1
    for result in (batch, streamed):
        checked = [s for s in result.trace.steps if s.message == "answer checked sentence by sentence"]
        assert checked and checked[0].data["withheld"] == [
            "Quantum flux capacitors recalibrate nightly across orbital datacenters [1]."]


def test_phone_regions_are_honoured_by_both_paths(tiny_index):
    """A national number of a region not configured is not recognised, in the batch answer
    and in the stream alike (the stream used to ignore ``guardrails.phone_regions``)."""
    reply = "Employees get 25 days of annual leave [1]. Request leave in the HR portal or call 030 901820 [1]."
    out = {}
    for regions in (("DE",), ("US",)):
        llm = ScriptedLLM(reply)
        kb = KnowledgeBase.open(tiny_index, config(routes=("hybrid",), min_confidence=0.0,
                                                   guardrails=GuardrailConfig(phone_regions=regions)), llm=llm)
        batch, streamed, pieces = _both(kb, LEAVE_Q, llm)
        assert streamed.answer == batch.answer
        out[regions] = batch.answer
    assert "030 901820" not in out[("DE",)] and "[redacted phone]" in out[("DE",)]
    assert "030 901820" in out[("US",)]


def test_llm_failure_falls_back_to_the_same_extractive_answer(tiny_index, kb):
    llm = ScriptedLLM("", fail=True)
    with_llm = KnowledgeBase.open(tiny_index, config(), llm=llm)
    batch, streamed, pieces = _both(with_llm, LEAVE_Q, llm)
    assert streamed.answer == batch.answer == kb.query(LEAVE_Q).answer
    assert any(s.stage == "answer" and "failed" in s.message for s in batch.trace.steps)
    assert any(s.stage == "answer" and "failed" in s.message for s in streamed.trace.steps)
