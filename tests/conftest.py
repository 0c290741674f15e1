"""Shared pytest fixtures."""
from __future__ import annotations

import pytest

from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture
def openai_server():
    """A started :class:`ScriptedOpenAIServer`; stopped after the test."""
    with ScriptedOpenAIServer() as server:
        yield server
