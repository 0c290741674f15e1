"""The reference-documentation benchmark: its question file and how an answer or item is scored."""
import re

import pytest

from bench.common import read_jsonl
from bench.prepare.debian_docs import SETS
from bench.prepare.splits import half_of
from bench.quality.bench_refdocs import QUESTIONS, aggregate, copies, gold_match, norm, score

GOLD = {"document": "zsh/html/Options.html", "answer": "BG_NICE (-6) Run all background jobs at a lower priority.",
        "regex": r"BG_NICE\s*\(\s*-6\s*\).{0,20}Run\s+all\s+background\s+jobs"}


# per set: the fewest questions, the product names an unnamed question may not use
_SETS = {"servers": (120, r"\b(?:bind|named|haproxy|git|zsh|rsyslogd?)\b"),
         "sqlite-python": (60, r"sqlite|python|cpython|\bpip\b"),
         "tools": (60, r"ffmpeg|ffprobe|ffplay|libav|\bvim\b|\bgvim\b|\bvi\b|debian|\bapt\b|apt-get|dpkg")}


@pytest.mark.parametrize("name", sorted(_SETS))
def test_the_question_files_are_whole_and_balanced(name):
    fewest, products = _SETS[name]
    docset = SETS[name]
    qs = read_jsonl(docset.questions)
    assert len(qs) >= fewest and len({q["id"] for q in qs}) == len(qs)
    for q in qs:
        re.compile(q["gold"]["regex"])
        assert q["kind"] in {"default", "option", "command", "procedure", "concept"}
        assert q["domain"] in docset.packages and q["gold"]["document"].startswith(q["domain"] + "/")
    assert abs(sum(q["names_product"] for q in qs) - len(qs) / 2) <= 1
    halves = [half_of(q["id"]) for q in qs]
    assert 0.35 < halves.count("dev") / len(qs) < 0.65
    forbidden = re.compile(products, re.I)
    assert not any(forbidden.search(q["question"]) for q in qs if not q["names_product"])
    assert len({q["kind"] for q in qs}) == 5


def test_matching_reads_tables_and_defused_angles_as_the_page_does():
    assert norm("integer | 10 |\n no ¶") == "integer 10 no"
    assert gold_match(GOLD, "BG_NICE (-6) ‹C› ‹Z›\nRun all background jobs at a lower priority.")
    assert not gold_match(GOLD, "BG_NICE (-6) is an option. " + "x" * 40 + " Run all background jobs")


def test_a_question_is_scored_on_its_first_matching_item_of_the_gold_product():
    q = {"id": "deb-zsh-06", "domain": "zsh", "names_product": True, "gold": GOLD}
    wrong_product = {"domain": "git", "heading": "", "text": "BG_NICE (-6) Run all background jobs"}
    right = {"domain": "zsh", "heading": "BG_NICE (-6)", "text": "Run all background jobs at a lower priority."}
    got = {"items": [wrong_product, right], "routing": ["zsh"], "answer": "No answer.", "ms": 12.0}
    row = score(q, got)
    assert row["first"] == 1 and row["routing"] and not row["first_evidence"] and not row["answer"]
    agg = aggregate([row], {q["id"]: q})
    assert agg["all"]["hit@1"] == 0 and agg["all"]["hit@5"] == 1 and agg["named"]["n"] == 1


def test_copies_count_items_that_repeat_an_earlier_one_of_the_same_product():
    entry = {"domain": "git", "heading": "--verify-signatures", "text": "Verify that the tip commit  is signed."}
    again = {**entry, "text": "Verify that the tip commit is signed.\n"}       # whitespace aside, the same
    other_product = {**entry, "domain": "zsh"}
    other_entry = {**entry, "heading": "--squash"}
    assert copies([entry, again, other_product, other_entry, again]) == 2
    q = {"id": "deb-git-01", "domain": "git", "names_product": True, "gold": GOLD}
    row = score(q, {"items": [entry, again], "routing": ["git"], "answer": "", "ms": 1.0})
    assert row["copies"] == 1 and aggregate([row], {q["id"]: q})["all"]["copies@10"] == 1
