"""bench/performance/bench_ann.py: recall and latency of the vector indexes over a grid of settings."""
import pytest

from bench.performance.bench_ann import render, sweep
from pipelines.run_build import run_build
from schemas.config import BuildConfig, EmbeddingConfig, StoreConfig
from tests.support.corpus import write_corpus


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = tmp_path_factory.mktemp("ann")
    corpus = write_corpus(str(root / "corpus"))
    index = str(root / "index")
    run_build(BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"),
                          store=StoreConfig(vector_index_min_rows=5, vector_rows_per_partition=64)))
    return index


def test_the_sweep_measures_every_setting_on_both_tables_and_scopes(indexed):
    rows = sweep(indexed, "net", ["How do I reset the router?", "annual leave days"], [4], [1, 8], [None, 50])
    assert {(r["table"], r["scope"]) for r in rows} == {(t, s) for t in ("contents", "directories")
                                                       for s in ("scoped", "scope-free")}
    assert len(rows) == 4 * 2 * 2
    assert all(0.0 <= r["recall_at_10"] <= 1.0 and r["n"] == 2 and r["p95_ms"] >= r["p50_ms"] for r in rows)
    # re-ranking wide on full vectors over a table this small finds the exact top 10
    assert all(r["recall_at_10"] == 1.0 for r in rows if r["refine_factor"] == 8)
    text = render({"command": "c", "date": "d", "commit": "x", "machine": "m", "index": indexed, "rows": "r",
                   "results": rows})
    assert "| contents | scoped | 4 | 8 | 50 | 1.0 |" in text and "| directories | scope-free | 4 | 1 | default |" in text
