"""The PDF bench's question file and its answer matching (no download, no index)."""
from bench.common import read_jsonl
from bench.prepare.splits import split
from bench.quality.bench_pdf import QUESTIONS, answer_hit, norm, page_hit, render


def test_the_question_file_has_30_located_questions_on_both_halves():
    qs = read_jsonl(QUESTIONS)
    assert len(qs) >= 30 and len({q["id"] for q in qs}) == len(qs)
    halves = split(qs)
    assert halves["dev"] and halves["test"]
    for q in qs:
        g = q["gold"]
        assert g["document"].startswith(q["domain"] + "/") and g["page"] >= 1 and len(g["answer"]) >= 10


def test_an_answer_matches_without_whitespace_but_not_with_a_broken_word_or_unicode_minus():
    gold = {"document": "bash/bash.pdf", "page": 81, "answer": "-e Exit immediately"}
    ev = {"source": "bash/bash.pdf", "page": 80, "text": "Options:\n-e  Exit\nimmediately if"}
    assert answer_hit(ev, gold) and page_hit(ev, gold)
    assert not answer_hit({**ev, "text": "\u2212e Exit immediately"}, gold)
    assert not answer_hit({**ev, "source": "bash/bashref.pdf"}, gold)
    assert not page_hit({**ev, "page": 79}, gold)
    assert norm("sig\u00adnal") == "signal" and norm("sig-nal") != "signal"


def test_render_lists_every_run_and_half():
    halves = {h: {"n": 2, "hit@1": 1, "hit@5": 2, "page@1": 1, "page@5": 2} for h in ("dev", "test", "all")}
    fig = {"headings": 3, "flag_headings": 0, "hyphen_breaks_left": 1, "hyphen_breaks": 4, "minus_left": 0,
           "toc_pages_indexed": 0, "toc_pages": 1, "running_left": 0, "def_pairs_kept": 2, "def_pairs": 2,
           "parse_s": 1.0}
    run = {"commit": "abc1234", "date": "d", "machine": {"uname": "u"}, "extraction": {"bash/bash.pdf": fig},
           "retrieval": [{"embedding": "hashing", "halves": halves}]}
    text = render({"runs": {"before": run, "after": {**run, "commit": "def5678"}}})
    assert "commit abc1234" in text and "commit def5678" in text
    assert text.count("| hashing | dev |") == 2 and "| before | bash/bash.pdf | 3 | 0 | 1 / 4 |" in text
