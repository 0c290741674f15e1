"""The pieces behind issue 28, without a server process: the failed-authentication limiter on
an injected clock, the JSON depth scan, limits and flags, the 500 envelope, the chat fields."""
from __future__ import annotations

import typing

import pytest

from runners.cli import make_parser
from runners.serve.auth import AuthFailureLimiter, RateLimited
from runners.serve.chat import IGNORED_CHAT_FIELDS, IGNORED_MESSAGE_FIELDS, ChatMessage, ChatRequest
from runners.serve.errors import describe, openai_shaped
from runners.serve.guard import ServeLimits, json_depth
from runners.serve_cli import build_app
from tests.runners.serve.conftest import config
from tests.support.live_server import STAFF, serve_index, write_keys


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_auth_failures_are_a_token_bucket_per_address():
    clock = Clock()
    limiter = AuthFailureLimiter(3, clock=clock)
    for _ in range(3):
        limiter.check("a")
        limiter.failed("a")
    with pytest.raises(RateLimited) as exc:
        limiter.check("a")
    assert exc.value.retry_after == 20                 # one failure back every 60 / 3 s
    limiter.check("b")                                  # another address is untouched
    clock.now += 19.5
    with pytest.raises(RateLimited) as exc:
        limiter.check("a")
    assert exc.value.retry_after == 1
    clock.now += 0.5
    limiter.check("a")                                  # one failure allowed again, not more
    limiter.failed("a")
    with pytest.raises(RateLimited):
        limiter.check("a")
    clock.now += 3600                                   # refills to the budget, never beyond it
    for _ in range(3):
        limiter.check("a")
        limiter.failed("a")
    with pytest.raises(RateLimited):
        limiter.check("a")


def test_auth_failure_limit_off_and_bounded_memory():
    clock = Clock()
    off = AuthFailureLimiter(0, clock=clock)
    for _ in range(1000):
        off.failed("a")
    off.check("a")
    limiter = AuthFailureLimiter(2, clock=clock, max_clients=10)
    for n in range(100):
        limiter.failed(f"10.0.0.{n}")
    assert len(limiter._buckets) <= 10
    limiter.failed("10.0.0.99")                         # the newest are kept
    with pytest.raises(RateLimited):
        limiter.check("10.0.0.99")
    with pytest.raises(ValueError):
        AuthFailureLimiter(-1)


@pytest.mark.parametrize("text, depth", [
    ('{"question": "x"}', 1),
    ('"just a string"', 0),
    ("[[[]]]", 3),
    ('{"a": "[[[[[[[[", "b": [{"c": "]]]]\\"[[["}]}', 3),
    ("[" * 1000 + "]" * 1000, 1000),
    ('{"model": "vdgr", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}', 5),
])
def test_json_depth_skips_strings(text, depth):
    assert json_depth(text) == depth


@pytest.mark.parametrize("kw", [{"max_body_bytes": 0}, {"body_timeout_s": 0}, {"auth_failures_per_minute": -1},
                                {"max_json_depth": 1}])
def test_limits_are_checked(kw):
    with pytest.raises(ValueError):
        ServeLimits(**kw)


def test_serve_flags_reach_the_application(served_index, tmp_path):
    keys = write_keys(str(tmp_path / "keys.yaml"))
    base = ["serve", "--index", served_index, "--api-keys", keys, "--embedding", "hashing", "--embedding-dim", "64"]
    app = build_app(make_parser().parse_args(base))
    assert app.state.limits == ServeLimits()
    assert app.openapi_url is None and not {"/openapi.json", "/docs"} & {r.path for r in app.routes}
    app = build_app(make_parser().parse_args(base + ["--max-body-bytes", "4096", "--body-timeout", "3",
                                                     "--auth-failures-per-minute", "0", "--openapi"]))
    assert app.state.limits == ServeLimits(max_body_bytes=4096, body_timeout_s=3.0, auth_failures_per_minute=0,
                                           openapi=True)
    assert {"/openapi.json", "/docs"} <= {r.path for r in app.routes}


def test_an_unexpected_exception_is_a_500_in_the_envelope(served_index):
    def boom(*args, **kwargs):
        raise RuntimeError("a bug, with a secret path /etc/vdgr")

    with serve_index(served_index, config()) as live:
        live.app.state.service.query = boom
        status, _, body = live.request("POST", "/v1/query", {"question": "annual leave"}, key=STAFF)
        assert status == 500
        assert body == {"error": {"type": "server_error", "message": "internal error: the server log has the details"}}
        status, _, body = live.request("POST", "/v1/chat/completions",
                                       {"model": "vdgr", "messages": [{"role": "user", "content": "annual leave"}]},
                                       key=STAFF)
        assert status == 500 and set(body["error"]) == {"message", "type", "param", "code"}
        assert "/etc/vdgr" not in str(body)
        _, _, text = live.request("GET", "/metrics")
        assert 'vdgr_requests_total{endpoint="/v1/query",status="500"} 1.0' in text


def test_error_shape_follows_the_path():
    assert not openai_shaped("/v1/query") and not openai_shaped("/v1/domains") and not openai_shaped("/healthz")
    assert openai_shaped("/v1/chat/completions") and openai_shaped("/v1/models") and openai_shaped("/v1/embeddings")
    message, field = describe([{"type": "extra_forbidden", "loc": ("body", "groups"), "msg": "x"},
                               {"type": "missing", "loc": ("body", "question"), "msg": "x"}])
    assert field == "groups" and "credential" in message and "question: required" in message


def test_chat_fields_follow_the_openai_sdk():
    from openai.types.chat import completion_create_params

    sdk = set(typing.get_type_hints(completion_create_params.CompletionCreateParamsBase))
    read = {"model", "messages", "stream"}
    assert sdk - read <= IGNORED_CHAT_FIELDS, "new OpenAI chat parameters: add them to IGNORED_CHAT_FIELDS"
    assert not (IGNORED_CHAT_FIELDS & set(ChatRequest.model_fields))
    assert not (IGNORED_MESSAGE_FIELDS & set(ChatMessage.model_fields))
