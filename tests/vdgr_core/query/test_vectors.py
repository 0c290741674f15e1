"""Dense search: LanceDB's vector index with the scope as prefilter, and the exact scan of the
layouts' vectors."""
import os
import shutil

import numpy as np
import pytest

from pipelines.run_build import run_build
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig, QueryConfig, StoreConfig
from tests.support.corpus import write_corpus
from tests.support.layouts import strip_layout_vectors
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.query.scope import QueryScope
from vdgr_core.store.filters import SearchScope

HASHING = EmbeddingConfig(kind="hashing")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    """The same corpus twice: without vector indexes (exact path) and with them (every table of
    five rows or more gets one, so queries go through LanceDB's index)."""
    root = tmp_path_factory.mktemp("vectors")
    corpus = write_corpus(str(root / "corpus"))
    exact, indexed = str(root / "exact"), str(root / "indexed")
    run_build(BuildConfig(corpus=corpus, index=exact, embedding=HASHING))
    run_build(BuildConfig(corpus=corpus, index=indexed, embedding=HASHING,
                          store=StoreConfig(vector_index_min_rows=5, vector_rows_per_partition=64)))
    return exact, indexed


def _kbs(indexes):
    """The exact index, and the indexed one with every scope sent to its vector index."""
    return [KnowledgeBase.open(indexes[0], QueryConfig(embedding=HASHING)),
            KnowledgeBase.open(indexes[1], QueryConfig(embedding=HASHING, exact_max_rows=0))]


def test_the_indexed_table_is_searched_through_its_vector_index(indexes):
    exact, indexed = _kbs(indexes)
    assert not exact.vectors.indexed(T.CONTENTS) and indexed.vectors.indexed(T.CONTENTS)
    assert indexed.reader.manifest.vector_indexes[T.CONTENTS]["indexed_rows"] > 0
    assert exact.vectors.scans(T.CONTENTS, ("hr", "net", "specs"))
    assert not indexed.vectors.scans(T.CONTENTS, ("net",))


def test_a_scope_of_few_rows_scans_the_layouts_even_where_the_table_has_an_index(indexes):
    small = KnowledgeBase.open(indexes[1], QueryConfig(embedding=HASHING,
                                                       exact_max_rows=_count(indexes[1], "net")))
    assert small.vectors.scans(T.CONTENTS, ("net",))
    assert not small.vectors.scans(T.CONTENTS, ("hr", "net", "specs"))     # more rows: the index


def _count(index, domain):
    kb = KnowledgeBase.open(index, QueryConfig(embedding=HASHING))
    return kb.data.count("content", domain)


def test_layouts_hold_the_tables_vectors_in_local_order(indexes):
    kb = KnowledgeBase.open(indexes[0], QueryConfig(embedding=HASHING))
    data = kb.reader.table(T.CONTENTS).search().select(["chunk_id", "domain", "vector"]).to_arrow()
    table = {i: np.asarray(v, dtype=np.float32) for i, v in
             zip(data.column("chunk_id").to_pylist(), data.column("vector").to_pylist())}
    for domain in kb.data.domains:
        lay = kb.data.layout(domain)
        vectors = lay.vectors("content")
        assert vectors.dtype == np.float32 and vectors.shape == (lay.nc, kb.reader.manifest.dim)
        for local, cid in enumerate(lay.array("content_ids")):
            assert np.array_equal(vectors[local], table[cid.decode()])
        assert lay.vectors("dir").shape == (lay.nd, kb.reader.manifest.dim)


def test_a_layout_without_vectors_is_searched_through_the_table(indexes, tmp_path):
    """An index whose layouts hold no vectors (written before they did) still answers alike."""
    copy = str(tmp_path / "old")
    shutil.copytree(indexes[0], copy)
    strip_layout_vectors(copy)
    old = KnowledgeBase.open(copy, QueryConfig(embedding=HASHING))
    new = KnowledgeBase.open(indexes[0], QueryConfig(embedding=HASHING))
    assert not old.vectors.scans(T.CONTENTS, ("net",)) and new.vectors.scans(T.CONTENTS, ("net",))
    q = new.embedder.embed(["How do I reset the router?"])[0]
    scope = QueryScope(SearchScope(domains=("hr", "net", "specs")))
    a, b = old.vectors.search(T.CONTENTS, q, scope, 5), new.vectors.search(T.CONTENTS, q, scope, 5)
    assert [r for r, _ in a] == [r for r, _ in b]
    assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
    rows = [r for r, _ in b]
    assert np.allclose(old.vectors.similarity(T.CONTENTS, q, rows), new.vectors.similarity(T.CONTENTS, q, rows),
                       atol=1e-5)


def test_both_paths_find_the_same_rows_with_exact_cosines(indexes):
    exact, indexed = _kbs(indexes)
    for question in ("How do I reset the router?", "annual leave days", "MIMO layers scheduler"):
        q = exact.embedder.embed([question])[0]
        for domains in (("net",), ("hr", "net", "specs")):
            scope = QueryScope(SearchScope(domains=domains))
            a = exact.vectors.search(T.CONTENTS, q, scope, 5)
            b = indexed.vectors.search(T.CONTENTS, q, scope, 5)
            # the two indexes hold the same rows under the same ids: compare by chunk id
            ids = lambda kb, hits: [kb.data.contents.ids[r] for r, _ in hits]  # noqa: E731
            assert ids(exact, a) == ids(indexed, b)
            assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-4)     # refined: exact cosines


def test_the_vector_index_search_carries_the_configured_probes_refine_and_ef(indexes):
    sent = []

    class Recording:
        """The table, its searches' query objects recorded as LanceDB would run them."""

        def __init__(self, table):
            self._table = table

        def search(self, *args, **kwargs):
            builder = self._table.search(*args, **kwargs)
            to_arrow = builder.to_arrow

            def recorded(*a, **k):
                sent.append(builder.to_query_object())
                return to_arrow(*a, **k)
            builder.to_arrow = recorded
            return builder

    q = KnowledgeBase.open(indexes[1], QueryConfig(embedding=HASHING)).embedder.embed(["reset the router"])[0]
    scope = QueryScope(SearchScope(domains=("net",)))
    # k 5: LanceDB is asked for 10 rows x refine 7, and refuses an ef below those 70
    for ef, expect in ((None, None), (321, 321), (3, 70)):
        kb = KnowledgeBase.open(indexes[1], QueryConfig(embedding=HASHING, exact_max_rows=0, ann_nprobes=3,
                                                        ann_refine_factor=7, ann_ef=ef))
        reader_table = kb.reader.table
        kb.reader.table = lambda name: Recording(reader_table(name))
        sent.clear()
        assert kb.vectors.search(T.CONTENTS, q, scope, 5)
        (query,) = sent
        assert (query.minimum_nprobes, query.refine_factor, query.ef) == (3, 7, expect)


def test_the_vector_index_never_returns_what_the_caller_may_not_read(indexes):
    _, indexed = _kbs(indexes)
    q = indexed.embedder.embed(["service backdoor maintenance shell port 2222"])[0]
    c = indexed.data.contents
    outsider = indexed.vectors.search(T.CONTENTS, q, QueryScope(SearchScope(domains=("net",))), 50)
    netops = indexed.vectors.search(T.CONTENTS, q, QueryScope(SearchScope(groups=("netops",), domains=("net",))), 50)
    assert not any("ZETA-77" in c.text[r] for r, _ in outsider)
    assert any("ZETA-77" in c.text[r] for r, _ in netops)
    v1 = QueryScope(SearchScope(domains=("net",), versions=("1.0",)))
    assert {c.version[r] for r, _ in indexed.vectors.search(T.CONTENTS, q, v1, 50)} == {"1.0"}


def test_similarity_of_given_rows_and_best_directory_per_domain_agree_across_paths(indexes):
    exact, indexed = _kbs(indexes)
    q = exact.embedder.embed(["Orbit X2 factory reset"])[0]
    rows_a = list(range(len(exact.data.contents)))
    ids = [exact.data.contents.ids[r] for r in rows_a]
    rows_b = [int(indexed.data.contents.row(exact.data.contents.domain[r], i)) for r, i in zip(rows_a, ids)]
    assert np.allclose(exact.vectors.similarity(T.CONTENTS, q, rows_a),
                       indexed.vectors.similarity(T.CONTENTS, q, rows_b), atol=1e-5)
    scope = QueryScope(SearchScope())
    a = exact.vectors.best_per_domain(T.DIRECTORIES, q, scope, ["hr", "net", "specs"])
    b = indexed.vectors.best_per_domain(T.DIRECTORIES, q, scope, ["hr", "net", "specs"])
    assert max(a, key=a.get) == max(b, key=b.get) and abs(a["net"] - b["net"]) < 1e-4


def test_queries_answer_alike_on_both_paths(indexes):
    exact, indexed = _kbs(indexes)
    for question in ("How do I reset the Orbit X2?", "How many days of annual leave?"):
        ra, rb = exact.query(question, k=3), indexed.query(question, k=3)
        assert [e.chunk_id for e in ra.evidence] == [e.chunk_id for e in rb.evidence]
    assert os.path.isdir(indexes[1])


def test_the_shortlist_is_every_domain_that_fits_else_the_best_ranked_prefix(indexes):
    kb = KnowledgeBase.open(indexes[1], QueryConfig(embedding=HASHING, exact_max_rows=0))
    counts = {d: kb.data.count("dir", d) for d in ("hr", "net", "specs")}
    assert kb.vectors.shortlist(T.DIRECTORIES, ["specs", "hr", "net"]) == ["specs"]   # at least one
    budget = counts["net"] + counts["hr"]
    two = KnowledgeBase.open(indexes[1], QueryConfig(embedding=HASHING, exact_max_rows=budget))
    assert two.vectors.shortlist(T.DIRECTORIES, ["net", "hr", "specs"]) == ["net", "hr"]
    exact = KnowledgeBase.open(indexes[0], QueryConfig(embedding=HASHING, exact_max_rows=0))
    assert exact.vectors.shortlist(T.DIRECTORIES, ["specs", "hr", "net"]) == ["specs", "hr", "net"]  # no index


def test_routing_over_more_rows_than_the_budget_scores_a_shortlist_without_the_vector_index(indexes):
    kb = KnowledgeBase.open(indexes[1], QueryConfig(embedding=HASHING, exact_max_rows=kb_rows(indexes[1], "net")))
    searched = []
    original = kb.vectors._lance
    kb.vectors._lance = lambda table, *a: searched.append(table) or original(table, *a)
    r = kb.query("How do I reset the Orbit X2 router?")
    assert T.DIRECTORIES not in searched
    steps = [s for s in r.trace.steps if s.stage == "routing" and "dense signal" in s.message]
    assert steps and steps[0].data["dense_for"] == ["net"]
    assert r.routing[0].domain == "net"


def kb_rows(index, domain):
    return KnowledgeBase.open(index, QueryConfig(embedding=HASHING)).data.count("dir", domain)
