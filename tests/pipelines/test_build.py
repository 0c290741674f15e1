"""End-to-end builds of a small corpus with the fast hashing embedder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from pipelines.run_build import run_build
from vdgr_core.indexing import model_home as embed_module
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig
from tests.support.corpus import SHARED_PARAGRAPH, write_corpus
from vdgr_core.store.filters import SearchScope
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.tantivy_shard import ShardSearcher
from vdgr_core.store.writer import table_digest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _config(corpus, index):
    return BuildConfig(corpus=str(corpus), index=str(index), embedding=EmbeddingConfig(kind="hashing"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("build")
    corpus = write_corpus(str(root / "corpus"))
    # a fresh process memo: an earlier test in this process may have embedded the same texts
    embed_module._MEMO = embed_module.VectorMemo()
    report = run_build(_config(corpus, root / "index"))
    return corpus, str(root / "index"), report


def test_every_table_committed_with_counts(built):
    _, index, report = built
    reader = IndexReader(index)
    for name in T.TABLES:
        assert reader.table(name).count_rows() == report.rows[name]
    assert report.rows[T.CONTENTS] > 0 and report.rows[T.ENTITIES] > 0
    assert set(reader.manifest.tantivy_shards) == {"hr", "net", "specs"}


def test_bad_files_go_to_dead_letters_with_reasons(built):
    _, index, report = built
    dead = {r["path"]: r["reason"] for r in IndexReader(index).arrow(T.DEAD_LETTERS).to_pylist()}
    assert dead == {
        "net/routers/v1/empty.md": "empty",
        "net/routers/v1/blob.txt": "binary",
        "net/routers/v1/latin1.md": "undecodable",
        "net/routers/v1/photo.png": "unsupported_format",
    }
    assert report.dead_letters == 4
    docs = {r["path"]: r["status"] for r in IndexReader(index).arrow(T.DOCUMENTS).to_pylist()}
    assert docs["net/routers/v1/blob.txt"] == "dead_letter"
    assert docs["net/routers/v2/orbit.md"] == "indexed"


def test_same_path_in_two_versions_kept_apart(built):
    _, index, _ = built
    dirs = IndexReader(index).arrow(T.DIRECTORIES).to_pylist()
    resets = [d for d in dirs if d["title"] == "Factory reset"]
    assert sorted(d["version"] for d in resets) == ["1.0", "2.0"]
    assert len({d["node_id"] for d in resets}) == 2


def test_identical_text_in_two_files_kept_apart(built):
    _, index, _ = built
    contents = IndexReader(index).arrow(T.CONTENTS).to_pylist()
    shared = [c for c in contents if SHARED_PARAGRAPH in c["text"]]
    assert {c["source"] for c in shared} >= {"net/routers/v1/orbit.md", "net/routers/v2/orbit.md"}
    assert len({c["chunk_id"] for c in shared}) == len(shared)


def test_entity_in_many_documents_is_one_node_with_summed_weights(built):
    _, index, _ = built
    reader = IndexReader(index)
    ents = [e for e in reader.arrow(T.ENTITIES).to_pylist() if e["norm"] == "dl mimo mode"]
    by_domain = Counter(e["domain"] for e in ents)
    assert by_domain["net"] == 1
    net = next(e for e in ents if e["domain"] == "net")
    assert net["doc_frequency"] == 2 and net["chunk_frequency"] == 2
    sku = next(e for e in reader.arrow(T.ENTITIES).to_pylist()
               if e["domain"] == "net" and e["norm"] == "sku 90214 b")
    co = [x for x in reader.arrow(T.EDGES).to_pylist()
          if x["kind"] == T.COOCCURS and {x["src"], x["dst"]} == {net["entity_id"], sku["entity_id"]}]
    # SHARED_PARAGRAPH has two sentences naming both; it appears in two net documents.
    assert len(co) == 1 and co[0]["weight"] == 4.0


def test_version_and_acl_reach_every_node(built):
    _, index, _ = built
    reader = IndexReader(index)
    for c in reader.arrow(T.CONTENTS).to_pylist():
        if c["source"].startswith("net/internal/"):
            assert c["acl"] == ["netops"] and not c["public"] and c["acl_text"] == "|netops|"
        else:
            assert c["public"]
        if c["source"].startswith("net/routers/v2/"):
            assert c["version"] == "2.0"
    internal = [d for d in reader.arrow(T.DIRECTORIES).to_pylist() if d["full_path"][:2] == ["net", "internal"]]
    assert internal and all(d["acl"] == ["netops"] for d in internal)


def test_restricted_rows_have_bm25_subshards_of_their_own(built):
    """The build puts each ACL set's chunks in sub-shards of their own, so an outsider's BM25
    statistics (and scores) never count rows it cannot read."""
    _, index, _ = built
    reader = IndexReader(index)
    shards = reader.manifest.tantivy_shards["net"]
    assert sorted(s.acl for s in shards) == [(), ("netops",)]
    chunks = {s.acl: s.n_docs for s in shards}
    rows = reader.arrow(T.CONTENTS).to_pylist()
    assert chunks[("netops",)] == sum(r["domain"] == "net" and r["acl"] == ["netops"] for r in rows)
    searcher = reader.shard("net")
    outsider, netops = SearchScope(), SearchScope(groups=("netops",))
    assert [len(searcher.visible(x)) for x in (outsider, netops)] == [1, 2]
    public_shard = next(s for s in shards if not s.acl)
    alone = ShardSearcher(os.path.join(index, public_shard.folder))
    for query in ("router firmware", "backdoor ZETA-77 uplink"):
        assert searcher.search(query, 20, outsider) == alone.search(query, 20, outsider)
    assert {r["chunk_id"] for r in rows if r["acl"]} & {c for c, _ in searcher.search("backdoor ZETA-77", 20, netops)}


def test_restricted_text_does_not_leak_into_public_summaries(built):
    _, index, _ = built
    for d in IndexReader(index).arrow(T.DIRECTORIES).to_pylist():
        if d["public"]:
            assert "ZETA-77" not in d["summary"] and "backdoor" not in d["summary"].lower()


def test_edges_and_entities_hold_one_fragment_a_domain(built):
    # edges come from several steps and every bundle of each; gathered by domain before they are
    # written, a domain's rows make one fragment at this size (directories are not gathered)
    from pipelines.build import GATHERED
    from vdgr_core.store.fragments import lance_module, table_uri

    _, index, _ = built
    versions = IndexReader(index).manifest.table_versions
    assert set(GATHERED) == {T.EDGES, T.ENTITIES}
    for name in GATHERED:
        ds = lance_module().dataset(table_uri(index, name), version=versions[name])
        domains = [set(f.to_table(columns=["domain"]).column("domain").to_pylist()) for f in ds.get_fragments()]
        assert domains and all(len(d) == 1 for d in domains), name
        assert len(domains) == len(set().union(*domains)), (name, domains)


def test_containment_edges_form_a_tree(built):
    _, index, _ = built
    reader = IndexReader(index)
    dirs = {d["node_id"]: d for d in reader.arrow(T.DIRECTORIES).to_pylist()}
    contents = {c["chunk_id"] for c in reader.arrow(T.CONTENTS).to_pylist()}
    contains = [e for e in reader.arrow(T.EDGES).to_pylist() if e["kind"] == T.CONTAINS]
    children = Counter(e["dst"] for e in contains)
    assert all(n == 1 for n in children.values())
    assert contents <= set(children)
    for e in contains:
        assert e["src"] in dirs


def test_second_build_embeds_nothing_and_gives_same_index(built, tmp_path):
    corpus, index, first = built
    again = run_build(_config(corpus, index))
    assert first.embeddings_computed > 0
    assert again.embeddings_computed == 0
    # every text the first build embedded or took from its in-process memo comes from the cache
    assert again.embeddings_from_cache == first.embeddings_computed + first.embeddings_from_cache
    assert again.manifest.build_id == first.manifest.build_id


_DIGEST_SCRIPT = """
import json, sys
from pipelines.run_build import run_build
from schemas.config import BuildConfig, EmbeddingConfig
from schemas import tables as T
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.writer import table_digest
cfg = BuildConfig(corpus=sys.argv[1], index=sys.argv[2], embedding=EmbeddingConfig(kind="hashing"))
extra = sys.argv[3:]
report = run_build(cfg, extra)
r = IndexReader(sys.argv[2])
print(json.dumps({"build_id": report.manifest.build_id,
                  "tables": {n: table_digest(n, r.arrow(n)) for n in T.TABLES}}))
"""


def _build_in_subprocess(corpus, index, seed, extra=()):
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    out = subprocess.run([sys.executable, "-c", _DIGEST_SCRIPT, corpus, index, *extra], cwd=REPO,
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_builds_are_identical_under_different_hash_seeds(built, tmp_path):
    corpus, _, _ = built
    a = _build_in_subprocess(corpus, str(tmp_path / "a"), 1)
    b = _build_in_subprocess(corpus, str(tmp_path / "b"), 4242)
    assert a == b


def test_multiprocess_runner_gives_the_same_index(built, tmp_path):
    corpus, index, _ = built
    reader = IndexReader(index)
    expected = {n: table_digest(n, reader.arrow(n)) for n in T.TABLES}
    got = _build_in_subprocess(corpus, str(tmp_path / "mp"), 7,
                               ["--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    assert got["tables"] == expected
