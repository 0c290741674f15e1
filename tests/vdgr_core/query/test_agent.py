"""Backtracking, reflection and answers."""
import re

from tests.support.tiny_index import SECRET_WORD
from vdgr_core.query.backtrack import backtrack
from vdgr_core.query.context import Search
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.fusion import SectionHit
from vdgr_core.query.trace import TraceRecorder
from vdgr_core.store.filters import SearchScope


def _row(kb, title, version, containing=""):
    c = kb.data.contents
    return next(r for r in range(len(c))
                if c.title[r] == title and c.version[r] == version and containing in c.text[r])


def _hit(kb, row, score=1.0, routes=("hybrid",)):
    return SectionHit(int(kb.data.sections.of_row[row]), score, (row,), routes)


def test_backtrack_adds_neighbour_sections_covering_missing_words(kb):
    c, sec = kb.data.contents, kb.data.sections
    first = _row(kb, "Wireless PowerShare", "1.0", "Galaxy Buds")
    question = "Wireless PowerShare stops below which battery level percent?"
    scope = QueryScope(SearchScope(domains=("Galaxy_S10",), versions=("1.0",)))
    cmask = c.mask(scope)
    trace = TraceRecorder()
    q = Search(question, kb.embedder.embed([question])[0], scope, ("Galaxy_S10",), trace)
    added = backtrack(kb.data, kb.vectors, q, [_hit(kb, first, 1.0, ("hybrid",))], depth=kb.config.backtrack_depth)
    assert added and all(h.routes == ("backtrack",) for h in added)
    # other sections than the evidence's own, inside the scope, covering a missing word
    assert all(h.section != int(sec.of_row[first]) for h in added)
    assert all(cmask[r] for h in added for r in h.rows)
    text = " ".join(c.text[r].lower() for h in added for r in h.rows)
    assert "battery" in text or "percent" in text
    assert any(s.stage == "backtrack" for s in trace.steps)


def test_backtrack_not_triggered_when_evidence_covers_question(kb):
    row = _row(kb, "Bluetooth", "1.0")
    q = Search("Bluetooth headphones", kb.embedder.embed(["x"])[0], QueryScope(SearchScope()), (), TraceRecorder())
    added = backtrack(kb.data, kb.vectors, q, [_hit(kb, row, 1.0, ("hybrid",))], depth=kb.config.backtrack_depth)
    assert added == []
    assert [s.message for s in q.trace.steps] == ["evidence covers the question: no backtracking"]


def test_backtrack_climbs_to_parent_siblings_within_acl(kb):
    c = kb.data.contents
    start = _row(kb, "Sick leave", "2024")
    question = f"{SECRET_WORD} band review"
    qvec = kb.embedder.embed([question])[0]
    for groups, expect in (((), False), (("hr",), True)):
        scope = QueryScope(SearchScope(groups=groups, domains=("HR_Policies",)))
        cmask = c.mask(scope)
        q = Search(question, qvec, scope, ("HR_Policies",), TraceRecorder())
        added = backtrack(kb.data, kb.vectors, q, [_hit(kb, start, 1.0, ("hybrid",))], depth=kb.config.backtrack_depth)
        found = any(SECRET_WORD in c.text[r] for h in added for r in h.rows)
        assert found is expect
        assert all(cmask[r] for h in added for r in h.rows)


def test_backtracked_evidence_is_labelled_and_best_kept(kb):
    c = kb.data.contents
    first = _row(kb, "Wireless PowerShare", "1.0", "Galaxy Buds")
    other = _row(kb, "Bluetooth", "1.0")
    question = "Wireless PowerShare stops below which battery level percent?"
    cmask = c.mask(QueryScope(SearchScope(domains=("Galaxy_S10",), versions=("1.0",))))
    fused = [_hit(kb, first, 0.05, ("hybrid",)), _hit(kb, other, 0.04, ("toc",))]
    scope = QueryScope(SearchScope(domains=("Galaxy_S10",), versions=("1.0",)))
    q = Search(question, kb.embedder.embed([question])[0], scope, ("Galaxy_S10",), TraceRecorder())
    out = kb.expander.with_backtrack(q, fused, 3)
    assert out[0].row == first                           # the best evidence keeps its place
    added = [f for f in out if f.routes == ("backtrack",)]
    assert added and all(cmask[r] for f in added for r in f.rows)
    assert len(added) <= 1                               # at most k // 3 sections are added
    assert {f.section for f in fused} <= {f.section for f in out}   # nothing of round one lost


def test_reflection_rounds_are_bounded(open_kb):
    for rounds in (0, 1, 2):
        kb = open_kb(reflection=True, reflection_rounds=rounds, backtrack=False)
        r = kb.query("zzqx plorf wibble", domain="Galaxy_S10")
        steps = [s for s in r.trace.steps if s.stage == "reflection"]
        assert len(steps) <= rounds
        if rounds:
            assert steps and "insufficient" in steps[0].message


def test_reflection_off_records_nothing(open_kb):
    kb = open_kb(reflection=False, backtrack=False)
    r = kb.query("zzqx plorf", domain="Galaxy_S10")
    assert not [s for s in r.trace.steps if s.stage in ("reflection", "backtrack")]
    assert "reflection" not in r.trace.timings_ms


def test_extractive_answer_cites_evidence(kb):
    r = kb.query("How many days of annual leave do employees get?")
    cites = [int(n) for n in re.findall(r"\[(\d+)\]", r.answer)]
    assert cites and all(1 <= n <= len(r.evidence) for n in cites)
    assert "25 days" in r.answer
    assert "25 days" in r.evidence[cites[0] - 1].text


def test_trace_has_timings_and_total(kb):
    r = kb.query("Bluetooth headphones", qid="q1")
    assert r.id == "q1"
    t = r.trace.timings_ms
    assert {"total", "embed", "routing", "retrieve", "answer"} <= set(t)
    assert t["total"] >= t["retrieve"]
    assert r.trace.llm_calls == 0
