"""Dense search: LanceDB's vector index with the scope as prefilter, and the exact path."""
import os

import numpy as np
import pytest

from pipelines.run_build import run_build
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig, QueryConfig, StoreConfig
from tests.support.corpus import write_corpus
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
    return [KnowledgeBase.open(i, QueryConfig(embedding=HASHING)) for i in indexes]


def test_the_indexed_table_is_searched_through_its_vector_index(indexes):
    exact, indexed = _kbs(indexes)
    assert not exact.vectors.indexed(T.CONTENTS) and indexed.vectors.indexed(T.CONTENTS)
    assert indexed.reader.manifest.vector_indexes[T.CONTENTS]["indexed_rows"] > 0


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
