"""Access control: a document restricted to group "hr" never leaks through any route."""
import pytest

from tests.support.tiny_index import SECRET_TITLE, SECRET_WORD

ROUTE_SETS = [("bm25",), ("dense",), ("hybrid",), ("toc",), ("graph",), ("hybrid", "toc", "graph")]
SECRET_SECTIONS = ("Engineering bands", "Band review")


def _leaks(result, question) -> list[str]:
    out = [e.chunk_id for e in result.evidence
           if SECRET_TITLE in e.path or "Salary_Bands" in e.source or SECRET_WORD in e.text]
    answer = result.answer.lower()
    if "do not mention:" in answer:     # a clarification lists the asker's own missing words
        head, tail = answer.split("do not mention:", 1)
        answer = head + tail.split(".", 1)[-1]
    if SECRET_WORD.lower() in answer.replace(SECRET_WORD.lower() + " band", ""):
        out.append("answer")
    dump = result.trace.model_dump_json().replace(question, "")
    out += [s for s in SECRET_SECTIONS if s in dump]
    return out


@pytest.mark.parametrize("routes", ROUTE_SETS)
@pytest.mark.parametrize("composition", ["parallel", "sequential"])
def test_restricted_document_invisible_without_group(open_kb, routes, composition):
    kb = open_kb(routes=routes, composition=composition, backtrack=True, backtrack_depth=3)
    for q in (SECRET_TITLE, f"{SECRET_WORD} band E5 salary", "Engineering bands Band review"):
        for kw in ({}, {"domain": "HR_Policies"}, {"groups": ["staff"]}):
            r = kb.query(q, **kw)
            assert _leaks(r, q) == [], (routes, q, kw)


@pytest.mark.parametrize("routes", ROUTE_SETS)
def test_restricted_document_found_with_group(open_kb, routes):
    kb = open_kb(routes=routes)
    r = kb.query(f"{SECRET_TITLE} {SECRET_WORD} band E5", groups=["hr"])
    assert any(SECRET_TITLE in e.path for e in r.evidence), routes


def test_routing_summaries_respect_acl(kb):
    r = kb.query(SECRET_TITLE)
    assert "Salary" not in str([s.data for s in r.trace.steps if s.stage == "routing"])


@pytest.fixture(scope="module")
def netops_kb(tmp_path_factory):
    """The tiny index plus a domain only group "netops" may read."""
    from tests.support.tiny_index import DESCRIPTIONS, DOCS, Doc, build_tiny_index
    from tests.vdgr_core.query.conftest import config
    from vdgr_core.query.knowledge_base import KnowledgeBase

    runbook = Doc("NetOps_Runbooks", "Runbooks", "", "Core router failover", (
        ("Failover", ("Drain the core router, then move the VRRP priority to the standby.",)),), acl=("netops",))
    firmware = Doc("Galaxy_S10", "Manual", "9.9", "Engineering firmware", (
        ("Modem bring-up", ("Flash the engineering modem image with the Odin service tool.",)),), acl=("netops",))
    index = build_tiny_index(str(tmp_path_factory.mktemp("netops_index")), docs=(*DOCS, runbook, firmware),
                             descriptions={**DESCRIPTIONS, "NetOps_Runbooks": "Network operations runbooks"})
    return KnowledgeBase.open(index, config())


def _observable(result) -> dict:
    """Everything a caller sees of a result but the timings' values (their keys stay)."""
    steps = [(s.stage, s.message.replace("NetOps_Runbooks", "<domain>").replace("No_Such_Domain", "<domain>"),
              s.data) for s in result.trace.steps]       # the name asked for is echoed: not a leak
    return {"answer": result.answer, "evidence": [e.chunk_id for e in result.evidence],
            "routing": [r.model_dump() for r in result.routing], "steps": steps,
            "stages": sorted(result.trace.timings_ms)}


def test_an_unreadable_domain_is_resolved_like_a_missing_one(netops_kb):
    question = "How do I fail over the core router?"
    hidden = netops_kb.query(question, domain="NetOps_Runbooks", groups=["staff"])
    missing = netops_kb.query(question, domain="No_Such_Domain", groups=["staff"])
    assert _observable(hidden) == _observable(missing)
    assert not any(k.startswith("route_") for k in hidden.trace.timings_ms)     # no search work at all
    readable = netops_kb.query(question, domain="NetOps_Runbooks", groups=["netops"])
    assert any("Core router failover" in e.path for e in readable.evidence)


@pytest.mark.parametrize("domain", [None, "Galaxy_S10"])
def test_an_unreadable_version_is_resolved_like_a_missing_one(netops_kb, domain):
    question = "How do I flash the engineering modem image?"
    hidden = netops_kb.query(question, domain=domain, version="9.9", groups=["staff"])
    missing = netops_kb.query(question, domain=domain, version="8.8", groups=["staff"])
    assert _observable(hidden) == _observable(missing)
    assert not any(k.startswith("route_") for k in hidden.trace.timings_ms)
    readable = netops_kb.query(question, domain=domain, version="9.9", groups=["netops"])
    assert any("Engineering firmware" in e.path for e in readable.evidence)
