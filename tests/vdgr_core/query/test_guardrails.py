from vdgr_core.query.guardrails import screen_answer, screen_query


def test_query_screen_blocks_whole_words_case_insensitively():
    assert not screen_query("How do I get the ADMIN PASSWORD list?", ["admin password"]).allowed
    assert screen_query("How do I change my password?", ["admin password"]).allowed
    assert screen_query("What is passwordless login?", ["password"]).allowed


def test_answer_screen_redacts_secrets_always():
    out = screen_answer("Use key sk-abcdefghijklmnopqrstuvwx and password: hunter2 [1].",
                        ["Use key sk-abcdefghijklmnopqrstuvwx"])
    assert "sk-abc" not in out.answer and "hunter2" not in out.answer
    assert "[REDACTED:api_key]" in out.answer
    assert out.redactions == ("api_key", "password")


def test_personal_data_kept_only_when_in_the_evidence():
    evidence = ["Call the management office at +7 495 123-45-67."]
    kept = screen_answer("Call +7 495 123-45-67 [1].", evidence)
    assert "+7 495 123-45-67" in kept.answer and kept.redactions == ()
    gone = screen_answer("Write to jane.doe@example.com or call +1 650-253-0000 or (650) 253-0001.", evidence)
    assert "example.com" not in gone.answer and "253-0000" not in gone.answer and "253-0001" not in gone.answer
    assert gone.redactions == ("email", "phone")


def test_answer_screen_keeps_dates_amounts_versions_and_part_numbers():
    answer = ("Firmware 2.0.1 (build 10.0.19045.3803) ships on 2026-11-29 (29.11.2026, 2026/11/29) for "
              "4 100 000 RUB, 4,100,000 USD or 1 250 000,00 EUR; order part SM-G973F, SKU-90214-B, "
              "P/N 0411-2345-678, serial 1234567890, ISBN 978-3-16-148410-0, at 12:30:45 from 192.168.8.1 "
              "(ticket 123e4567-e89b-12d3-a456-426614174000).")
    out = screen_answer(answer, [])
    assert out.answer == answer and out.redactions == ()


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


def test_a_phone_number_followed_by_a_citation_is_still_recognised():
    out = screen_answer("Request leave in the HR portal or call 030 901820 [1].", ["Request leave in the HR portal."],
                        phone_regions=("DE",))
    assert out.answer == "Request leave in the HR portal or call [redacted phone] [1]." and out.redactions == ("phone",)
    kept = screen_answer("Call 030 901820 [1].", ["Call 030 901820 today."], phone_regions=("DE",))
    assert kept.answer == "Call 030 901820 [1]."
