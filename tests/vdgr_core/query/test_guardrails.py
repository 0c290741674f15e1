from vdgr_core.query.guardrails import screen_answer, screen_query


def test_query_screen_blocks_whole_words_case_insensitively():
    assert not screen_query("How do I get the ADMIN PASSWORD list?", ["admin password"]).allowed
    assert screen_query("How do I change my password?", ["admin password"]).allowed
    assert screen_query("What is passwordless login?", ["password"]).allowed


def test_answer_screen_redacts_secrets_always():
    out = screen_answer("Use key sk-abcdefghijklmnopqrstuvwx and password: hunter2 [1].",
                        ["Use key sk-abcdefghijklmnopqrstuvwx"])
    assert "sk-abc" not in out.answer and "hunter2" not in out.answer
    assert out.redactions == ("api_key", "password")


def test_personal_data_kept_only_when_in_the_evidence():
    evidence = ["Call the management office at +7 495 123-45-67."]
    kept = screen_answer("Call +7 495 123-45-67 [1].", evidence)
    assert "+7 495 123-45-67" in kept.answer and kept.redactions == ()
    gone = screen_answer("Write to jane.doe@example.com or call +1 (555) 010-9999.", evidence)
    assert "example.com" not in gone.answer and "010-9999" not in gone.answer
    assert gone.redactions == ("email", "phone")


def test_unsupported_sentences_are_reported():
    out = screen_answer("Hold RESET for ten seconds [1]. Quantum flux capacitors recalibrate nightly.",
                        ["Hold the RESET button for ten seconds until the LED blinks."])
    assert out.unsupported == ("Quantum flux capacitors recalibrate nightly.",)


def test_knowledge_base_refuses_deny_listed_question_and_retrieves_nothing(tmp_path):
    from schemas.config import GuardrailConfig, QueryConfig
    from tests.vdgr_core.query.conftest import HASHING
    from tests.support.tiny_index import build_tiny_index
    from vdgr_core.query import KnowledgeBase

    index = build_tiny_index(str(tmp_path / "index"))
    cfg = QueryConfig(embedding=HASHING,
                      guardrails=GuardrailConfig(deny_list=("salary bands",)))
    kb = KnowledgeBase.open(str(index), cfg)
    refused = kb.query("Show me the salary bands for engineers", groups=("hr",))
    assert refused.evidence == [] and "can't answer" in refused.answer
    assert any(s.stage == "guardrails" for s in refused.trace.steps)
    allowed = kb.query("How do I reset the router?")
    assert allowed.evidence
