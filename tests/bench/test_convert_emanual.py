"""The E-Manual converter reproduces the gold section paths (fast: S10 + one other manual)."""
import json

import pytest

from bench.common import tree_hash
from bench.prepare import convert_emanual as ce
from bench.prepare.corpus_paths import corpus_section_paths
from bench.prepare.emanual_tree import load_manual, title_path
from vdgr_core.eval.metrics import path_matches

pytestmark = pytest.mark.skipif(not ce.emanual_root().exists(), reason="shared bench data absent")


@pytest.fixture(scope="module")
def s10(tmp_path_factory):
    out = tmp_path_factory.mktemp("emanual")
    stats = ce.convert(out)
    return out, stats


def test_all_50_gold_paths_are_section_paths(s10):
    out, stats = s10
    paths = corpus_section_paths(out / "corpus")
    qs = [json.loads(x) for x in (out / "questions_s10.jsonl").read_text().splitlines()]
    assert len(qs) == 50 and stats["gold_resolution"]["unresolved"] == 0
    for q in qs:
        gold = q["gold"]["paths"][0]
        hits = [p for p in paths if p[0] == "Galaxy_S10" and path_matches(p, gold)]
        assert hits, gold
        assert "domain" not in q and "t5" not in json.dumps(q)


def test_every_section_path_is_reproduced_exactly(s10):
    out, _ = s10
    paths = corpus_section_paths(out / "corpus")
    _, secs = load_manual(ce.emanual_root() / "s10_manual_corpus.json")
    expected = {("Galaxy_S10", *title_path(secs, sid)) for sid, s in secs.items() if s.parent}
    assert expected <= set(paths)


def test_one_five_level_gold_path_is_resolved_by_subsequence(s10):
    out, _ = s10
    qs = [json.loads(x) for x in (out / "questions_s10.jsonl").read_text().splitlines()]
    sub = [q for q in qs if q["gold"]["resolved"] == "subsequence"]
    assert len(sub) == 1
    assert sub[0]["gold"]["paths"][0][-1] == sub[0]["gold"]["gold_path_raw"][-1] == "Notifications"


def test_conversion_is_deterministic_and_meta_is_set(s10, tmp_path):
    out, _ = s10
    ce.convert(tmp_path)
    assert tree_hash(tmp_path / "corpus") == tree_hash(out / "corpus")
    meta = (out / "corpus" / "Galaxy_S10" / "_meta.yaml").read_text()
    assert "Samsung Galaxy S10 user manual" in meta


def test_settings_for_all_manuals():
    qs = [{"id": "a", "question": "How can I turn on the GPS ?", "gold": {}},
          {"id": "b", "question": "AOD themes?", "gold": {}}]
    s = ce.settings(qs, include_others=True)
    assert s["scoped"][0]["domain"] == "Galaxy_S10" and "domain" not in s["unscoped"][0]
    assert s["named"][0]["question"] == "On my Galaxy S10, how can I turn on the GPS ?"
    assert s["named"][1]["question"].startswith("On my Galaxy S10, AOD")


def test_quirky_manual_duplicates_are_collapsed(tmp_path):
    src = ce.emanual_root() / "other_manuals" / "Galaxy_A11.json"
    roots, secs = load_manual(src)
    titles = [secs[r].title for r in roots]
    assert titles.count("Camera and Gallery") == 1
    for sid in secs:                                   # no section sits under its own twin
        p = title_path(secs, sid)
        assert all(a != b for a, b in zip(p, p[1:])), p
    ce.write_manual(src, tmp_path / "Galaxy_A11", "Galaxy A11")
    paths = corpus_section_paths(tmp_path)
    assert any(p[1:3] == ("Camera and Gallery", "Camera") for p in paths)
