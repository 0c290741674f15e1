"""A section printed in several documents takes one place among the first k, not several."""
from __future__ import annotations

import pytest

from tests.support.tiny_index import Doc, build_tiny_index
from tests.vdgr_core.query.conftest import config
from vdgr_core.query.fusion import SectionHit, copies_last
from vdgr_core.query.knowledge_base import KnowledgeBase

SIGNED = "Verify that the tip commit of the side branch being merged is signed with a valid key."
DOCS = (
    Doc("Git", "Manual", "2.39", "git-merge", (("--verify-signatures", (SIGNED,)),
                                               ("--squash", ("Produce the working tree as if a real merge happened.",)))),
    Doc("Git", "Manual", "2.39", "git-pull", (("--verify-signatures", (SIGNED,)),
                                              ("--rebase", ("Rebase the current branch on top of the upstream branch.",)))),
    Doc("Git", "Manual", "2.39", "git-verify-commit", (("DESCRIPTION", (
        "Validates the GPG signature created by git commit -S; the tip commit key must be valid.",)),)),
)


def _hits(sections):
    return [SectionHit(s, 1.0 / (i + 1), (s,), ("hybrid",)) for i, s in enumerate(sections)]


def test_a_copy_goes_behind_the_first_k_and_nothing_is_lost():
    key = {0: "a", 1: "a", 2: "b", 3: "c", 4: "a"}.__getitem__
    out = copies_last(_hits([0, 1, 2, 3, 4]), lambda h: key(h.section), k=3)
    assert [h.section for h in out] == [0, 2, 3, 1, 4]
    # fewer distinct sections than k: the copies still follow the distinct ones
    assert [h.section for h in copies_last(_hits([0, 1, 2]), lambda h: key(h.section), k=5)] == [0, 2, 1]
    # no copies: the order is untouched
    assert copies_last(_hits([2, 3]), lambda h: key(h.section), k=1) == _hits([2, 3])


@pytest.fixture(scope="module")
def git_index(tmp_path_factory) -> str:
    return build_tiny_index(str(tmp_path_factory.mktemp("copies")), DOCS, {"Git": "Git manual pages"})


@pytest.mark.parametrize("copies", [True, False])
def test_the_same_entry_in_two_manual_pages_is_shown_once(git_index, copies):
    kb = KnowledgeBase.open(git_index, config(k=2, copies_last=copies))
    r = kb.query("verify that the tip commit of the side branch is signed")
    paths = [tuple(e.path[-2:]) for e in r.evidence]
    signed = [p for p in paths if p[-1] == "--verify-signatures"]
    assert len(r.evidence) == 2
    if copies:
        assert len(signed) == 1 and any(p[-1] != "--verify-signatures" for p in paths)
    else:       # the baseline this guards against: both copies take the two places
        assert len(signed) == 2


CLOSING = (
    Doc("Git", "Manual", "2.39", "git-merge", (("--verify-signatures", (SIGNED, "See also: git-pull(1).")),
                                               ("--squash", ("Produce the working tree as if a real merge happened.",)))),
    Doc("Git", "Manual", "2.39", "git-pull", (("--verify-signatures", (SIGNED, "See also: git-merge(1).")),
                                              ("--rebase", ("Rebase the current branch on top of the upstream branch.",)))),
    DOCS[2],
)


def test_copies_that_differ_in_a_closing_line_are_shown_once(tmp_path):
    # SQLite prints each C interface on a page of its own, with a "See also" line under it, and
    # again on one page of all of them: the same section, a different last chunk
    kb = KnowledgeBase.open(build_tiny_index(str(tmp_path), CLOSING, {"Git": "Git manual pages"}), config(k=2))
    paths = [tuple(e.path[-2:]) for e in kb.query("verify that the tip commit of the side branch is signed").evidence]
    assert len(paths) == 2 and sum(p[-1] == "--verify-signatures" for p in paths) == 1
