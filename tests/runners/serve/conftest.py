"""A tiny real index served by a real uvicorn server, shared by the service tests of a module."""
from __future__ import annotations

import pytest

from schemas.config import EmbeddingConfig, QueryConfig
from tests.support.live_server import serve_index
from tests.support.tiny_index import DIM, build_tiny_index

HASHING = EmbeddingConfig(kind="hashing", dim=DIM)


def config(**kw) -> QueryConfig:
    return QueryConfig(embedding=HASHING, **kw)


@pytest.fixture(scope="package")
def served_index(tmp_path_factory) -> str:
    return build_tiny_index(str(tmp_path_factory.mktemp("served_index")))


@pytest.fixture(scope="module")
def live(served_index):
    with serve_index(served_index, config()) as server:
        yield server
