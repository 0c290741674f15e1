"""One public stop-word list for BM25 query terms, directory labels and the query's content words."""
from __future__ import annotations

import ast
import pathlib

from tests.support.labels import content_words
from vdgr_core.query import textutil
from vdgr_core.stopwords import STOP_WORDS
from vdgr_core.store import tantivy_shard

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_bm25_labels_and_query_terms_drop_the_same_words():
    question = "How do I reset the Orbit X2 router to its factory settings?"
    want = ["reset", "orbit", "x2", "router", "factory", "settings"]
    assert tantivy_shard.query_terms(question) == want
    assert content_words(question) == want
    assert textutil.terms(question) == want
    assert {"the", "how", "to", "its"} <= STOP_WORDS


def test_no_module_imports_a_private_name_of_another_package_module():
    """``from vdgr_core.x import _name`` across modules: the stop words once were one."""
    offenders = []
    for path in (REPO / "vdgr_core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vdgr_core.store"):
                offenders += [f"{path.relative_to(REPO)}: {a.name}" for a in node.names
                              if a.name.startswith("_")]
    assert offenders == []
