"""Property: after any sequence of add / modify / delete / rename / metadata change / access-control
change (``_meta.yaml`` and front matter) / corruption, an incremental (document-level) update gives
exactly the index a full rebuild of the resulting corpus gives: same ids, rows, ACL columns, edge
weights, summaries, BM25 document sets and build id.

CI runs a few examples per path; ``make bench`` runs ``VDGR_UPDATE_EXAMPLES`` (200) of them.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipelines.run_build import run_build
from pipelines.run_update import run_update
from schemas import tables as T
from tests.support.update_ops import apply_op, hashing_config, snapshot
from vdgr_core.store.reader import IndexReader

SLOTS = ["net/routers/a.md", "net/routers/b.md", "net/c.md", "hr/d.md", "hr/policies/e.md"]
EXAMPLES = int(os.environ.get("VDGR_UPDATE_EXAMPLES", "5"))
ACLS = ((), ("netops",), ("hr-staff", "netops"))     # () : readable by everyone

ops = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(SLOTS), st.integers(0, 3),
              st.lists(st.integers(0, 3), min_size=1, max_size=3), st.sampled_from(ACLS)),
    st.tuples(st.just("delete"), st.sampled_from(SLOTS)),
    st.tuples(st.just("rename"), st.sampled_from(SLOTS), st.sampled_from(SLOTS)),
    st.tuples(st.just("meta"), st.sampled_from(["net/routers", "hr", "hr/policies"]),
              st.sampled_from(["1.0", "2.0"]), st.sampled_from(ACLS)),
    st.tuples(st.just("corrupt"), st.sampled_from(SLOTS)),
)


# in_driver_max 0: the arriving documents always go through the Beam pipeline; 200: always
# through the driver. Both must give the index a full build gives.
@pytest.mark.parametrize("in_driver_max", [0, 200], ids=["pipeline", "driver"])
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=st.lists(ops, min_size=1, max_size=3))
@example(sequence=[("meta", "hr", "1.0", ("hr-staff",)),                     # folder ACL set
                   ("write", "net/routers/a.md", 0, [0, 1], ("netops",)),     # document ACL set
                   ("meta", "hr", "1.0", ())])                                # folder ACL dropped
def test_incremental_update_equals_full_rebuild(tmp_path_factory, in_driver_max, sequence):
    root = str(tmp_path_factory.mktemp("prop"))
    corpus, live = os.path.join(root, "corpus"), os.path.join(root, "live")
    apply_op(corpus, ("write", "net/routers/a.md", 0, [0, 1]))
    apply_op(corpus, ("write", "hr/d.md", 1, [2]))
    run_build(hashing_config(corpus, live))
    for step, op in enumerate(sequence):
        apply_op(corpus, op)
        run_update(hashing_config(corpus, live, in_driver_max))
        fresh = os.path.join(root, f"fresh{step}")
        run_build(hashing_config(corpus, fresh))
        assert snapshot(live) == snapshot(fresh), f"diverged after {op}"


def test_an_index_embedded_another_way_is_embedded_again_by_an_update(tmp_path, monkeypatch):
    """A release that computes vectors another way (a new model id for the same settings):
    the update embeds every domain again, so its index equals a rebuild's."""
    import vdgr_core.embedding as embedding

    corpus, live, fresh = str(tmp_path / "c"), str(tmp_path / "live"), str(tmp_path / "fresh")
    apply_op(corpus, ("write", "net/routers/a.md", 0, [0, 1]))
    apply_op(corpus, ("write", "hr/d.md", 1, [2]))
    run_build(hashing_config(corpus, live))
    monkeypatch.setitem(embedding._IDENTITIES, "hashing", lambda c: f"hashing:v1-next:{c.dim}")
    report = run_update(hashing_config(corpus, live))
    assert report.plan.config_changed and report.build is not None
    run_build(hashing_config(corpus, fresh))
    assert IndexReader(live).manifest.embedding_model == "hashing:v1-next:384"
    assert snapshot(live) == snapshot(fresh)


def test_update_reports_moves_and_touches_only_changed_domains(tmp_path):
    corpus, index = str(tmp_path / "c"), str(tmp_path / "i")
    apply_op(corpus, ("write", "net/routers/a.md", 0, [0, 1]))
    apply_op(corpus, ("write", "hr/d.md", 1, [2]))
    first = run_build(hashing_config(corpus, index))
    hr_shard = IndexReader(index).manifest.tantivy_shards["hr"]
    apply_op(corpus, ("rename", "net/routers/a.md", "net/c.md"))
    report = run_update(hashing_config(corpus, index))
    assert report.plan.moved == (("net/routers/a.md", "net/c.md"),)
    assert report.plan.affected_domains == ("net",)
    assert IndexReader(index).manifest.tantivy_shards["hr"] == hr_shard
    assert report.build.manifest.parent_build_id == first.manifest.build_id
    nothing = run_update(hashing_config(corpus, index))
    assert nothing.plan.empty and nothing.build is None


def test_reader_open_during_update_keeps_its_version(tmp_path):
    corpus, index = str(tmp_path / "c"), str(tmp_path / "i")
    apply_op(corpus, ("write", "net/routers/a.md", 0, [0]))
    run_build(hashing_config(corpus, index))
    before = IndexReader(index)
    n_before = before.arrow(T.CONTENTS).num_rows
    apply_op(corpus, ("write", "net/routers/b.md", 2, [1, 3]))
    run_update(hashing_config(corpus, index))
    assert before.table(T.CONTENTS).count_rows() == n_before
    assert IndexReader(index).arrow(T.CONTENTS).num_rows > n_before


def _acl_of(index: str, source: str) -> set:
    rows = IndexReader(index).arrow(T.CONTENTS).to_pylist()
    return {tuple(r["acl"]) for r in rows if r["source"] == source}


def test_acl_changes_reach_every_row_of_the_document_through_an_update(tmp_path):
    """An ACL change is a change: ``_meta.yaml`` and front-matter ACLs move to the stored rows
    (and a rebuild agrees), not only text changes."""
    corpus, index = str(tmp_path / "c"), str(tmp_path / "i")
    apply_op(corpus, ("write", "net/routers/a.md", 0, [0, 1]))
    apply_op(corpus, ("write", "hr/d.md", 1, [2]))
    run_build(hashing_config(corpus, index))
    assert _acl_of(index, "hr/d.md") == {()}
    apply_op(corpus, ("meta", "hr", "1.0", ("hr-staff",)))
    apply_op(corpus, ("write", "net/routers/a.md", 0, [0, 1], ("netops",)))   # same text, new ACL
    report = run_update(hashing_config(corpus, index))
    assert not report.plan.empty
    assert _acl_of(index, "hr/d.md") == {("hr-staff",)}
    assert _acl_of(index, "net/routers/a.md") == {("netops",)}
    fresh = str(tmp_path / "fresh")
    run_build(hashing_config(corpus, fresh))
    assert snapshot(index) == snapshot(fresh)
