"""Permanent LLM failures fall back to the offline path and are reported, never swallowed."""
from __future__ import annotations

import pytest

from schemas.config import LLMConfig
from schemas.errors import LLMError
from vdgr_core.indexing.tree_summary import llm_directory_summarizer
from vdgr_core.llm.client import LLMClient


def _client(server):
    return LLMClient(LLMConfig(base_url=server.url, model="scripted", backoff_s=0.0, max_retries=1))


def test_directory_summary_falls_back_and_reports(openai_server):
    openai_server.script((400, "rejected"))
    seen = []
    with _client(openai_server) as client:
        summarize = llm_directory_summarizer(client, max_chars=300, on_fallback=lambda t, r: seen.append((t, r)))
        out = summarize("Radio", [("MIMO layers", "DL_MIMO_Mode selects up to 4 layers.")], "")
    assert "DL_MIMO_Mode" in out
    assert [t for t, _ in seen] == ["Radio"] and "400" in seen[0][1]
    assert len(openai_server.chat_requests()) == 1          # a 400 is not retried


def test_directory_summary_without_fallback_handler_raises(openai_server):
    openai_server.script((400, "rejected"))
    with _client(openai_server) as client:
        summarize = llm_directory_summarizer(client)
        with pytest.raises(LLMError):
            summarize("Radio", [("MIMO layers", "DL_MIMO_Mode selects up to 4 layers.")], "")
