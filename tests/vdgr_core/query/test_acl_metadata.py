"""What an outsider can observe never depends on restricted rows: routing, confidences, the
trace and LLM prompts consider only readable domains, and a restricted-only term changes no
ranking or expansion."""
from __future__ import annotations

import json

import numpy as np
import pytest

from schemas.config import LLMConfig
from tests.support.tiny_index import DESCRIPTIONS, DOCS, SECRET_WORD, Doc, build_tiny_index
from tests.vdgr_core.query.conftest import config
from vdgr_core.llm.client import LLMClient
from vdgr_core.query.context import Search
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.trace import TraceRecorder
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.store.filters import SearchScope

HIDDEN = "Mergers_Acquisitions"
HIDDEN_DOCS = (
    Doc(HIDDEN, "Deals", "2025", "Project Falconridge", (
        ("Term sheet", ("Falconridge acquires Orbitel for 4 billion euros; the Galaxy S10 line is sold.",)),
        ("Battery plant", ("The Falconridge battery plant closes after the Wireless PowerShare audit.",)),
    ), acl=("legal",)),
)
HIDDEN_DESCRIPTION = "Confidential merger plans (Project Falconridge)"
# a restricted collection inside a readable domain
RESTRICTED_COLLECTION = Doc("HR_Policies", "Compensation", "2024", "Executive Pay", (
    ("Bonus", ("Executive bonus pool rules for the annual leave year.",)),
), acl=("hr",))
LEAKS = (HIDDEN, "Mergers", "Falconridge", "Confidential", "Deals", "Orbitel", "Compensation", "Executive")

QUESTIONS = (
    "How does Wireless PowerShare charge the battery of the Galaxy S10?",
    "What happens to the Falconridge battery plant in the merger?",
    "How many days of annual leave do employees get?",
    f"Which {SECRET_WORD} band pays the most?",
)


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    """(with the restricted domain and collection, without them, restricted term swapped)."""
    root = tmp_path_factory.mktemp("acl")
    descriptions = {**DESCRIPTIONS, HIDDEN: HIDDEN_DESCRIPTION}
    full = build_tiny_index(str(root / "full"), DOCS + HIDDEN_DOCS + (RESTRICTED_COLLECTION,), descriptions)
    bare = build_tiny_index(str(root / "bare"), DOCS)
    swapped_docs = tuple(
        Doc(d.domain, d.collection, d.version, d.title,
            tuple((t, tuple(x.replace(SECRET_WORD, "Zimbrul") for x in xs)) for t, xs in d.sections), d.acl)
        for d in DOCS)
    swapped = build_tiny_index(str(root / "swapped"), swapped_docs)
    return full, bare, swapped


def _observable(result) -> dict:
    """Everything a caller sees except wall times."""
    d = json.loads(result.model_dump_json())
    d["trace"].pop("timings_ms")
    return d


def _all_questions(index: str, groups=(), **kw) -> list[dict]:
    kb = KnowledgeBase.open(index, config(**kw))
    return [_observable(kb.query(q, groups=groups)) for q in QUESTIONS]


def test_a_fully_restricted_domain_is_invisible_to_an_outsider(indexes):
    full, bare, _ = indexes
    seen = _all_questions(full)
    # exactly what the index without the restricted domain and collection shows
    assert seen == _all_questions(bare)
    # (the trace may echo the question's own words; it is covered by the equality above)
    text = json.dumps([[r["routing"], r["evidence"], r["answer"]] for r in seen])
    for leak in LEAKS:
        assert leak not in text


def test_a_reader_of_the_group_sees_the_domain(indexes):
    full, _, _ = indexes
    kb = KnowledgeBase.open(full, config())
    r = kb.query("What happens to the Falconridge battery plant in the merger?", groups=("legal",))
    assert HIDDEN in [d.domain for d in r.routing]
    assert any(e.domain == HIDDEN for e in r.evidence)


def test_a_restricted_only_term_changes_no_ranking_or_expansion_for_an_outsider(indexes):
    """The restricted document's word is swapped for another: BM25 document frequencies, entity
    nodes and co-occurrence edges differ between the two indexes, what an outsider sees does not."""
    _, bare, swapped = indexes
    for kw in ({}, {"routes": ("bm25",)}, {"routes": ("graph",)}, {"reflection_rounds": 3}):
        assert _all_questions(bare, **kw) == _all_questions(swapped, **kw)
    kb_a, kb_b = KnowledgeBase.open(bare, config()), KnowledgeBase.open(swapped, config())
    for q in QUESTIONS:         # the graph's query expansion (co-occurrence neighbours)
        scope = QueryScope(SearchScope(groups=()))
        domains = ("HR_Policies", "Galaxy_S10")
        qs = [Search(q, np.zeros(1, np.float32), scope, domains, TraceRecorder()) for _ in range(2)]
        assert kb_a.expander._expansions(qs[0]) == kb_b.expander._expansions(qs[1])
    # the insider does see the difference (the test can fail)
    insider = [kb.query(f"{SECRET_WORD} band pay", groups=("hr",)).evidence[0].text for kb in (kb_a, kb_b)]
    assert SECRET_WORD in insider[0] and SECRET_WORD not in insider[1]


def _schema_name(request) -> str:
    return ((request.get("response_format") or {}).get("json_schema") or {}).get("name", "")


def test_llm_router_is_offered_only_readable_domains_and_collections(indexes, openai_server):
    full, _, _ = indexes

    def respond(request):
        name = _schema_name(request)
        if name == "DomainChoice":
            return json.dumps({"domain": "HR_Policies"})
        if name == "CollectionChoice":
            return json.dumps({"collection": "ALL"})
        if name == "TocSelection":
            return json.dumps({"labels": ["D1"]})
        if name == "SufficiencyReply":
            return json.dumps({"sufficient": True, "gap": "", "refined_query": ""})
        return "{}" if name else "Employees get 25 days [1]."

    openai_server.responder = respond
    llm = LLMClient(LLMConfig(base_url=openai_server.url, model="test", max_retries=0, backoff_s=0))
    kb = KnowledgeBase.open(full, config(), llm=llm)
    r = kb.query("How many days of annual leave do employees get?")
    assert [d.domain for d in r.routing] == ["HR_Policies"]
    requests = openai_server.chat_requests()
    router = next(q for q in requests if _schema_name(q) == "DomainChoice")
    enum = router["response_format"]["json_schema"]["schema"]["properties"]["domain"]["enum"]
    assert sorted(enum) == ["Galaxy_S10", "Galaxy_S10e", "HR_Policies"]
    # one readable collection in HR_Policies for an outsider: no collection question at all
    assert not any(_schema_name(q) == "CollectionChoice" for q in requests)
    everything = json.dumps(requests)
    for leak in LEAKS:
        assert leak not in everything
    # an insider is offered both (the test can fail)
    openai_server.requests.clear()
    kb.query("How many days of annual leave do employees get?", groups=("hr", "legal"))
    requests = openai_server.chat_requests()
    router = next(q for q in requests if _schema_name(q) == "DomainChoice")
    assert HIDDEN in router["response_format"]["json_schema"]["schema"]["properties"]["domain"]["enum"]
    coll = next(q for q in requests if _schema_name(q) == "CollectionChoice")
    assert "Compensation" in coll["response_format"]["json_schema"]["schema"]["properties"]["collection"]["enum"]
