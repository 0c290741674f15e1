"""MuSiQue and DCD converters on the shared data (fast: a few seconds)."""
import json

import pytest

from bench.common import tree_hash
from bench.prepare import convert_dcd, convert_musique
from bench.prepare.corpus_paths import corpus_section_paths
from bench.prepare.dcd_facts import Fact, extract_facts, question_for


@pytest.mark.skipif(not convert_musique.multihop_root().exists(), reason="shared bench data absent")
def test_musique_one_document_per_passage(tmp_path):
    stats = convert_musique.convert(tmp_path, limit_questions=5)
    assert stats["passages"] == 1890 and stats["questions"] == 5
    files = sorted((tmp_path / "corpus" / "musique" / "passages").glob("*.md"))
    assert len(files) == 1890
    q = json.loads((tmp_path / "questions_musique.jsonl").read_text().splitlines()[0])
    assert 2 <= len(q["gold"]["sources"]) <= 4 and "Stanley Hall" in q["gold"]["answers"]
    for rel, title in zip(q["gold"]["sources"], q["gold"]["titles"]):
        text = (tmp_path / "corpus" / rel).read_text()
        assert text.startswith("---\ntitle: ") and title.split()[0] in text


def test_dcd_fact_extraction_and_questions():
    doc = ("**Parking**\n\n---\n\n### 2. Pricing\n\n| Item | Price |\n|------|-------|\n"
           "| Parking space purchase | 1.1M RUB |\n| Motorcycle space | — |\n\n"
           "### 3. Fines\n\nTowing applies. **Violation fine:** 3,000 RUB. Report it.\n")
    facts = extract_facts(doc)
    assert facts == [Fact("table", "Pricing", "Parking space purchase", "Price", "1.1M RUB"),
                     Fact("label", "Fines", "Violation fine", "", "3,000 RUB")]
    assert question_for(facts[0]) == "How much does parking space purchase cost?"
    assert question_for(facts[1]) == "What is the violation fine?"


@pytest.mark.skipif(not convert_dcd.dcd_root().exists(), reason="shared bench data absent")
def test_dcd_questions_are_deterministic_and_grounded(tmp_path):
    stats = convert_dcd.convert(tmp_path)
    assert stats == {"documents": 300, "questions": 150, "value_unique_to_domain": 150}
    rows = [json.loads(x) for x in (tmp_path / "questions_dcd.jsonl").read_text().splitlines()]
    for r in rows:
        g = r["gold"]
        assert r["question"].startswith(f"RC {convert_dcd.complex_name(g['domain'])}, section ")
        texts = [(tmp_path / "corpus" / s).read_text() for s in g["sources"]]
        assert all(s.startswith(g["domain"] + "/" + g["collection"][0] + "/") for s in g["sources"])
        assert any(g["value"] in t.replace("**", "") for t in texts)
    assert len({r["question"] for r in rows}) == 150
    first = (tmp_path / "questions_dcd.jsonl").read_bytes()
    h = tree_hash(tmp_path / "corpus")
    convert_dcd.convert(tmp_path)
    assert (tmp_path / "questions_dcd.jsonl").read_bytes() == first and tree_hash(tmp_path / "corpus") == h
    meta = (tmp_path / "corpus" / "zhk_sunny_shore" / "_meta.yaml").read_text()
    assert "Sunny Shore" in meta
    assert corpus_section_paths(tmp_path / "corpus")      # every file parses
