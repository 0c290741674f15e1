"""`vdgr mcp` through the MCP SDK's own client: stdio (the command as a subprocess) and
streamable HTTP (behind the API keys of `vdgr serve`), on a small hashing index built here."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import anyio
import pytest

pytest.importorskip("mcp")

import httpx2  # noqa: E402  (the HTTP client the SDK uses)
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from runners.mcp.http import PATH, caller_of_request, http_app  # noqa: E402
from runners.mcp.tools import NOT_FOUND, build_server  # noqa: E402
from runners.serve.auth import AuthFailureLimiter, Authenticator, KeysFile, RateLimiter  # noqa: E402
from runners.serve.snapshot import SnapshotHolder, open_snapshot  # noqa: E402
from schemas.config import EmbeddingConfig, QueryConfig  # noqa: E402
from tests.support.live_server import HR, KEYS, STAFF, uvicorn_in_thread  # noqa: E402
from tests.support.tiny_index import DIM, SECRET_TITLE, SECRET_WORD, build_tiny_index  # noqa: E402
from vdgr_core.query.knowledge_base import KnowledgeBase  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = QueryConfig(embedding=EmbeddingConfig(kind="hashing", dim=DIM))
SECRET_QUESTION = f"{SECRET_WORD} band E5 pay"


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> str:
    return build_tiny_index(str(tmp_path_factory.mktemp("mcp_index")))


@pytest.fixture(scope="module")
def restricted_id(index) -> str:
    """The chunk id of a restricted (group hr) section, found with the hr group."""
    result = KnowledgeBase.open(index, CONFIG).query(SECRET_QUESTION, groups=("hr",), with_answer=False)
    return next(e.chunk_id for e in result.evidence if SECRET_TITLE in e.path)


def _titles(result) -> list[str]:
    return [r["title"] for r in result.structured_content["results"]]


def _run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


# ---------------------------------------------------------------- stdio


def test_stdio_search_and_fetch_with_the_started_groups(index, restricted_id):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    params = StdioServerParameters(command=sys.executable, cwd=ROOT, env=env,
                                   args=["-m", "runners.cli", "mcp", "--index", index, "--groups", "staff"])

    async def session():
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"search", "fetch"}
            assert tools["search"].input_schema["required"] == ["query"]
            found = await client.call_tool("search", {"query": "Wireless PowerShare", "k": 3})
            assert not found.is_error
            hits = found.structured_content["results"]
            assert 1 <= len(hits) <= 3 and "Wireless PowerShare" in hits[0]["title"]
            section = await client.call_tool("fetch", {"id": hits[0]["id"]})
            assert not section.is_error
            assert hits[0]["text"].split("\n")[0] in section.structured_content["text"]
            assert section.structured_content["metadata"]["domain"] == hits[0]["domain"]
            # the restricted section: not searchable, and fetched like an id that does not exist
            hidden = await client.call_tool("search", {"query": SECRET_QUESTION})
            assert not any(SECRET_TITLE in t for t in _titles(hidden))
            refused = await client.call_tool("fetch", {"id": restricted_id})
            missing = await client.call_tool("fetch", {"id": "0" * 32})
            assert refused.is_error and missing.is_error
            assert refused.content[0].text == missing.content[0].text and NOT_FOUND in refused.content[0].text
            blank = await client.call_tool("search", {"query": "   "})
            assert blank.is_error

    _run(session)


# ---------------------------------------------------------------- streamable HTTP


@contextmanager
def _served(index: str):
    holder = SnapshotHolder(index, lambda i, emb: open_snapshot(i, CONFIG, emb), poll_s=0.0)
    app = http_app(build_server(holder, caller_of_request), Authenticator(KeysFile.model_validate(KEYS)),
                   RateLimiter("1000/minute"), AuthFailureLimiter(1000))
    with uvicorn_in_thread(app, "vdgr-test-mcp") as port:
        yield f"http://127.0.0.1:{port}{PATH}"


def _client(url: str, key: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60)


@pytest.fixture(scope="module")
def mcp_url(index):
    with _served(index) as url:
        yield url


def test_http_groups_come_from_the_credential(mcp_url, restricted_id):
    async def session(key):
        async with _client(mcp_url, key) as client:
            found = await client.call_tool("search", {"query": SECRET_QUESTION, "k": 5})
            fetched = await client.call_tool("fetch", {"id": restricted_id})
            return found, fetched

    found, fetched = _run(session, HR)
    assert any(SECRET_TITLE in t for t in _titles(found))
    assert not fetched.is_error and SECRET_WORD in fetched.structured_content["text"]
    found, fetched = _run(session, STAFF)
    assert not any(SECRET_TITLE in t for t in _titles(found))
    assert all(SECRET_WORD not in r["text"] for r in found.structured_content["results"])
    assert fetched.is_error and NOT_FOUND in fetched.content[0].text


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer not-a-key"}, {"Authorization": "Basic x"}])
def test_http_refuses_requests_without_a_valid_credential(mcp_url, headers):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    r = httpx2.post(mcp_url, json=body, headers={**headers, "Accept": "application/json, text/event-stream"})
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["error"]["type"] == "authentication_error"


def test_http_client_without_a_key_cannot_connect(mcp_url):
    async def session():
        async with Client(mcp_url, read_timeout_seconds=30) as client:
            await client.list_tools()

    with pytest.raises(Exception):
        _run(session)


def test_http_transport_needs_a_keys_file(index, capsys):
    from runners.cli import main

    assert main(["mcp", "--index", index, "--transport", "http"]) == 2
    assert "--api-keys" in capsys.readouterr().err


@pytest.mark.parametrize("args,problem", [({"query": "battery", "k": 0}, "greater than or equal to 1"),
                                          ({"query": "x" * 4001}, "at most 4000 characters")])
def test_search_arguments_are_validated(index, args, problem):
    from runners.serve.auth import Caller

    holder = SnapshotHolder(index, lambda i, emb: open_snapshot(i, CONFIG, emb), poll_s=0.0)

    async def call():
        async with Client(build_server(holder, lambda ctx: Caller("test", ()))) as client:
            return await client.call_tool("search", args)

    refused = _run(call)
    assert refused.is_error and problem in refused.content[0].text


def test_http_tool_errors_never_echo_the_arguments(mcp_url):
    """Issue 48: a 200-character id (and any other invalid argument) is refused naming the
    field and the rule, never the value sent; an unknown tool's name is not repeated."""
    long_id, marker = "Z" * 200, "<script>alert(1)</script>"

    async def session():
        async with _client(mcp_url, STAFF) as client:
            return (await client.call_tool("fetch", {"id": long_id}),
                    await client.call_tool("search", {"query": marker, "k": marker}),
                    await client.call_tool(marker, {}))

    too_long, bad_k, unknown = _run(session)
    assert too_long.is_error and too_long.content[0].text == \
        "invalid arguments of fetch: id: String should have at most 128 characters"
    assert bad_k.is_error and "k: Input should be a valid integer" in bad_k.content[0].text
    assert unknown.is_error and unknown.content[0].text == "unknown tool; the tools are fetch, search"
    for result in (too_long, bad_k, unknown):
        assert "ZZZZ" not in result.content[0].text and "script" not in result.content[0].text
