"""The demo question on the bundled corpus: the offline answer keeps v1 and v2 apart, quotes the
reset steps whole, and the batch answer equals the streamed one (hashing embeddings, real build)."""
from __future__ import annotations

import os

import pytest

from pipelines.run_build import run_build
from schemas.config import BuildConfig, EmbeddingConfig, QueryConfig
from vdgr_core.query.knowledge_base import KnowledgeBase

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CORPUS = os.path.join(REPO, "examples", "corpus")
Q = "How do I reset the Orbit X2 router to factory settings?"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("examples_hashing") / "index")
    emb = EmbeddingConfig(kind="hashing")
    run_build(BuildConfig(corpus=CORPUS, index=out, embedding=emb))
    return KnowledgeBase.open(out, QueryConfig(embedding=emb))


def test_demo_answer_keeps_versions_apart_and_quotes_the_steps(kb):
    batch = kb.query(Q)
    answer = batch.answer
    assert "For v2.0:" in answer and "For v1.0:" in answer
    starts = sorted((answer.index(f"For v{v}:"), v) for v in ("2.0", "1.0"))
    parts = {v: answer[a:(starts[i + 1][0] if i + 1 < len(starts) else len(answer))]
             for i, (a, v) in enumerate(starts)}
    assert "1. Press and hold the WPS button on the top for 5 seconds until the LED pulses white.\n" \
           "2. Within 10 seconds, press the power button once to confirm." in parts["2.0"]
    assert "RESET pinhole" in parts["1.0"] and "WPS" not in parts["1.0"]
    for c in batch.citations:          # every citation points at evidence of its part's version
        part = max((a, v) for a, v in starts if a <= c.start)[1]
        assert answer[c.start:c.end] == f"[{c.evidence}]"
        assert batch.evidence[c.evidence - 1].version == part

    retrieved = kb.query(Q, with_answer=False)
    streamed = "".join(kb.answer_pieces(retrieved, llm=None)).strip()
    assert streamed == retrieved.answer == answer


def test_a_version_filter_gives_one_unlabelled_answer(kb):
    result = kb.query(Q, version="1.0")
    assert "For v" not in result.answer
    assert "RESET pinhole" in result.answer and "WPS" not in result.answer
