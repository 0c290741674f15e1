"""POST /v1/query, credentials, errors, rate limits, health and metrics on a real server."""
from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor

import jwt as pyjwt
import pytest

from runners.serve.auth import JWTSettings
from tests.runners.serve.conftest import config
from tests.support.live_server import HR, STAFF, TIGHT, serve_index
from tests.support.tiny_index import SECRET_TITLE, SECRET_WORD

SECRET_Q = {"question": f"{SECRET_WORD} band E5 salary"}


def test_query_returns_the_result_contract(live):
    status, headers, body = live.request("POST", "/v1/query", {"question": "How many days of annual leave?",
                                                                "k": 3}, key=STAFF)
    assert status == 200, body
    assert set(body) == {"id", "question", "answer", "routing", "evidence", "trace", "citations"}
    assert 0 < len(body["evidence"]) <= 3
    ev = body["evidence"][0]
    assert set(ev) >= {"chunk_id", "domain", "version", "source", "path", "title", "text", "score", "routes"}
    assert body["routing"][0]["domain"] == "HR_Policies"
    assert "25 days" in body["answer"] and "[1]" in body["answer"]
    cites = body["citations"]                       # the answer's [n], with offsets, n an evidence item
    assert cites and all(body["answer"][c["start"]:c["end"]] == f"[{c['evidence']}]"
                         and 1 <= c["evidence"] <= len(body["evidence"]) for c in cites)
    assert "total" in body["trace"]["timings_ms"]
    assert headers["x-vdgr-build-id"] == live.holder.current().build_id


def test_groups_come_from_the_credential(live):
    _, _, staff = live.request("POST", "/v1/query", SECRET_Q, key=STAFF)
    _, _, hr = live.request("POST", "/v1/query", SECRET_Q, key=HR)
    assert not any(SECRET_TITLE in e["path"] for e in staff["evidence"])
    assert any(SECRET_TITLE in e["path"] for e in hr["evidence"])
    # a body claiming groups is refused, it never widens access
    status, _, body = live.request("POST", "/v1/query", {**SECRET_Q, "groups": ["hr"]}, key=STAFF)
    assert status == 400 and "credential" in body["error"]["message"]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer not-a-known-key-at-all"},
                                     {"Authorization": "Basic c3RhZmY6eA=="}])
def test_missing_or_unknown_credential_is_401(live, headers):
    status, hdrs, body = live.request("POST", "/v1/query", SECRET_Q, headers=headers)
    assert status == 401
    assert hdrs["www-authenticate"] == "Bearer"
    assert body["error"]["type"] == "authentication_error"
    status, _, _ = live.request("GET", "/v1/domains", headers=headers)
    assert status == 401


@pytest.mark.parametrize("body, needle", [
    ({}, "question"),
    ({"question": "x", "k": 0}, "k"),
    ({"question": "x", "k": "ten"}, "k"),
    ({"question": "x", "colour": "red"}, "colour"),
    ('{"question": "unterminated', "JSON"),
])
def test_bad_body_is_400_with_a_clear_message(live, body, needle):
    status, _, out = live.request("POST", "/v1/query", body, key=STAFF)
    assert status == 400
    assert out["error"]["message"].startswith("invalid request body")
    assert needle.lower() in out["error"]["message"].lower()


def test_per_key_rate_limit_is_429(live):
    codes = [live.request("POST", "/v1/query", {"question": "annual leave"}, key=TIGHT)[0] for _ in range(2)]
    status, headers, body = live.request("POST", "/v1/query", {"question": "annual leave"}, key=TIGHT)
    assert codes == [200, 200]
    assert status == 429 and int(headers["retry-after"]) >= 1
    assert body["error"]["type"] == "rate_limit_error"
    # other keys are not affected
    assert live.request("POST", "/v1/query", {"question": "annual leave"}, key=STAFF)[0] == 200


def test_domains_listing_respects_groups(live):
    _, _, staff = live.request("GET", "/v1/domains", key=STAFF)
    names = {d["name"]: d["versions"] for d in staff["domains"]}
    assert names["Galaxy_S10"] == ["1.0", "2.0"]
    assert set(names) == {"Galaxy_S10", "Galaxy_S10e", "HR_Policies"}


def test_sixteen_concurrent_clients_get_no_errors(live):
    questions = ["How many days of annual leave?", "How does Wireless PowerShare work on the Galaxy S10?",
                 "Where is the fingerprint sensor on the Galaxy S10e?", "Pair Bluetooth headphones"]

    def client(n):
        out = []
        for i in range(3):
            q = questions[(n + i) % len(questions)]
            status, _, body = live.request("POST", "/v1/query", {"question": q}, key=STAFF)
            out.append((q, status, [e["chunk_id"] for e in body["evidence"]] if status == 200 else body))
        return out

    with ThreadPoolExecutor(16) as pool:
        results = [r for rs in pool.map(client, range(16)) for r in rs]
    assert len(results) == 48
    assert all(status == 200 for _, status, _ in results), [r for r in results if r[1] != 200][:2]
    by_q = {}
    for q, _, ids in results:                 # concurrent answers equal the serial ones
        by_q.setdefault(q, set()).add(tuple(ids))
    assert all(len(v) == 1 for v in by_q.values())


def test_healthz_and_metrics(live):
    live.request("POST", "/v1/query", {"question": "annual leave"}, key=STAFF)
    status, _, health = live.request("GET", "/healthz")
    assert status == 200 and health["status"] == "ok"
    build = live.holder.current().build_id
    assert health["build_id"] == build
    status, headers, text = live.request("GET", "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert re.search(r'vdgr_requests_total\{endpoint="/v1/query",status="200"\} [1-9]', text)
    assert re.search(r'vdgr_request_seconds_bucket\{endpoint="/v1/query",le="\+Inf"\} [1-9]', text)
    assert f'vdgr_index_build_info{{build_id="{build}"}} 1.0' in text
    assert "# TYPE vdgr_llm_calls_total counter" in text


def _token(key, algorithm, **claims):
    base = {"sub": "jwt-user", "exp": int(time.time()) + 600}
    return pyjwt.encode({**base, **claims}, key, algorithm=algorithm)


def test_jwt_bearer_tokens_hs256_and_rs256(served_index):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    priv = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pub = priv.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    secret = "an-hs256-shared-secret-of-32-bytes!"
    for settings, good, bad in (
        (JWTSettings(algorithm="HS256", key=secret), secret, "another-secret-of-at-least-32-bytes"),
        (JWTSettings(algorithm="RS256", key=pub), priv, other),
    ):
        alg = settings.algorithm
        with serve_index(served_index, config(), jwt=settings) as live:
            status, _, body = live.request("POST", "/v1/query", SECRET_Q, key=_token(good, alg, groups=["hr"]))
            assert status == 200 and any(SECRET_TITLE in e["path"] for e in body["evidence"]), alg
            status, _, body = live.request("POST", "/v1/query", SECRET_Q, key=_token(good, alg))
            assert status == 200 and not any(SECRET_TITLE in e["path"] for e in body["evidence"]), alg
            for token in (_token(bad, alg, groups=["hr"]),                          # wrong key
                          _token(good, alg, groups=["hr"], exp=int(time.time()) - 5),  # expired
                          _token(good, alg, groups="hr")):                            # not a list
                status, _, body = live.request("POST", "/v1/query", SECRET_Q, key=token)
                assert status == 401 and "invalid token" in body["error"]["message"], alg
