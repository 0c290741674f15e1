"""Retrieval confidence, evidence compression and the streamed output check (unit level)."""
from __future__ import annotations

from vdgr_core.query.compress import compress_evidence, count_tokens
from vdgr_core.query.confidence import clarification, retrieval_confidence
from vdgr_core.query.result import Evidence
from vdgr_core.query.stream_check import WITHHELD, StreamChecker


def _ev(path, text, n=0):
    return Evidence(chunk_id=f"c{n}", domain="d", version="1", source="s.md", path=list(path), title=path[-1],
                    text=text, score=1.0 / (n + 1), routes=["hybrid"])


RESET = _ev(["Router", "Factory reset"], "Hold the RESET button for 10 seconds. The LED blinks amber.")
LEAVE = _ev(["HR", "Annual leave"], "Employees get 25 days of annual leave.", 1)


def test_confidence_high_when_one_item_covers_the_question():
    c = retrieval_confidence("How do I factory reset the router?", [RESET, LEAVE], 0.4)
    assert c.score == 1.0 and not c.low and c.missing == ()


def test_confidence_low_names_what_is_missing():
    c = retrieval_confidence("What is the warranty of the Zentrix toaster?", [RESET, LEAVE], 0.4)
    assert c.low and c.score < 0.4 and set(c.missing) == {"warranty", "zentrix", "toaster"}
    text = clarification("What is the warranty of the Zentrix toaster?", c, [RESET, LEAVE])
    assert "warranty, zentrix, toaster" in text and "Router > Factory reset [1]" in text
    assert text.endswith("?")
    # the threshold decides; 0 never asks back
    assert not retrieval_confidence("What is the warranty of the Zentrix toaster?", [RESET], 0.0).low


def test_confidence_partial_coverage_is_between():
    c = retrieval_confidence("factory reset warranty", [RESET], 0.4)
    assert 0.4 < c.score < 1.0 and c.missing == ("warranty",)


def test_compression_keeps_relevant_sentences_within_budget():
    filler = " ".join(f"Unrelated sentence number {i} about cable colours." for i in range(30))
    ev = [_ev(["A", "Reset"], filler + " Hold the RESET button for 10 seconds to reset. " + filler),
          _ev(["B", "Leave"], "Employees get 25 days of annual leave. " + filler, 1)]
    out = compress_evidence("How long do I hold the reset button?", ev, 60)
    assert out.tokens_before == sum(count_tokens(e.text) for e in ev)
    assert out.tokens_after <= 60 < out.tokens_before and out.saving > 0.8
    assert "Hold the RESET button for 10 seconds" in out.evidence[0].text
    assert [e.chunk_id for e in out.evidence] == ["c0", "c1"]       # numbering kept
    assert out.evidence[1].text                                       # every item keeps its best sentence
    # within budget: unchanged
    same = compress_evidence("reset", ev, 10_000)
    assert same.evidence == ev and same.saving == 0.0


def test_stream_checker_releases_only_checked_sentences():
    c = StreamChecker([RESET.text])
    assert c.feed("Hold the RESET button") == ""                      # incomplete: held back
    assert c.feed(" for 10 seconds [1]. Quantum flux capacitors recalibrate orbital datacenters") == \
        "Hold the RESET button for 10 seconds [1]. "
    assert c.feed(" nightly. The LED") == WITHHELD + " "
    assert c.finish() == "The LED"
    assert c.report.withheld == ["Quantum flux capacitors recalibrate orbital datacenters nightly."]


def test_stream_checker_redacts_credentials_and_unsupported_personal_data():
    c = StreamChecker([RESET.text, "Support: help@example.com"])
    out = c.feed("Hold the RESET button, token: s3cr3t-value [1]. Mail help@example.com or bob@evil.test for ")
    out += c.feed("help. ") + c.finish()
    assert "s3cr3t" not in out and "[REDACTED:" in out
    assert "help@example.com" in out and "bob@evil.test" not in out
    assert "email" in c.report.redactions and len(set(c.report.redactions)) == 2   # the email and the credential


def test_calibrated_probability_is_monotone_and_in_the_trace():
    from vdgr_core.query.confidence import calibrated

    probs = [calibrated(s / 10) for s in range(11)]
    assert probs == sorted(probs) and 0 < probs[0] < 0.01 and probs[-1] > 0.98
    c = retrieval_confidence("factory reset warranty", [RESET], 0.4)
    assert c.trace_data()["probability"] == calibrated(c.score)
