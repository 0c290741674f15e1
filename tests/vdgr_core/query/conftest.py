"""Fixtures: one tiny real index per test session and knowledge bases opened on it."""
from __future__ import annotations

import pytest

from schemas.config import EmbeddingConfig, QueryConfig
from tests.support.tiny_index import DIM, build_tiny_index
from vdgr_core.query.knowledge_base import KnowledgeBase

HASHING = EmbeddingConfig(kind="hashing", dim=DIM)


def config(**kw) -> QueryConfig:
    """A QueryConfig on the tiny index's embedder."""
    return QueryConfig(embedding=HASHING, **kw)


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory) -> str:
    return build_tiny_index(str(tmp_path_factory.mktemp("tiny_index")))


@pytest.fixture(scope="session")
def kb(tiny_index) -> KnowledgeBase:
    return KnowledgeBase.open(tiny_index, config())


@pytest.fixture
def open_kb(tiny_index):
    def _open(**kw) -> KnowledgeBase:
        llm = kw.pop("llm", None)
        return KnowledgeBase.open(tiny_index, config(**kw), llm=llm)
    return _open
