"""bench.quality.bench_answers: the baseline answer and the rendered block."""
from bench.quality.bench_answers import legacy_extractive_answer, render
from vdgr_core.query.answer import extractive_answer
from vdgr_core.query.result import Evidence

TEXT = ("This manual covers the Orbit X2 router, hardware version 2 (model\n"
        "SKU-90214-B), running firmware 2.x.")


def _ev(text):
    return Evidence(chunk_id="c", domain="d", version="", source="s.md", path=["Manual"], title="Manual",
                    text=text, score=1.0, routes=["bm25"])


def test_the_baseline_cuts_at_line_breaks_and_the_answer_does_not():
    q = "Which hardware version does the manual cover?"
    assert legacy_extractive_answer(q, [_ev(TEXT)]).startswith(
        "This manual covers the Orbit X2 router, hardware version 2 (model [1]")
    assert extractive_answer(q, [_ev(TEXT)]) == (
        "This manual covers the Orbit X2 router, hardware version 2 (model SKU-90214-B), running firmware 2.x. [1]")


def test_render_has_one_row_per_set_half_and_answer():
    half = {"questions": 2, "sentences": {"rouge_l": 0.25, "support": 1.0, "words": 30.0},
            "units": {"rouge_l": 0.5, "support": 0.75, "words": 40.0, "contains": 0.5}}
    report = {"command": "python -m bench.quality.bench_answers", "date": "2026-12-04 00:00 UTC", "commit": "abc1234",
              "machine": {"uname": "Linux", "nproc": 2}, "sets": {"s10": {"halves": {"dev": half, "test": half}}}}
    text = render(report)
    assert "| s10 | dev | 2 | units | 0.500 | 75.0% | 50.0% | 40.0 |" in text
    assert "| s10 | test | 2 | sentences | 0.250 | 100.0% | - | 30.0 |" in text
