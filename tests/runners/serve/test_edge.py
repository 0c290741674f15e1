"""The pieces behind issue 48, without a server process: the client address behind trusted
proxies, the allowed hosts, the security headers, the guard's flags on both commands."""
from __future__ import annotations

import pytest

from runners.cli import make_parser
from runners.http_options import guard_limits
from runners.serve.edge import API_CSP, ForwardedConflict, TrustedProxies, forwarded_for, secured, x_forwarded_for
from runners.serve.guard import ServeLimits, default_allowed_hosts, host_allowed
from runners.serve.startup import uvicorn_config

PROXIES = TrustedProxies(["10.0.0.0/8", "2001:db8:1::/48", "127.0.0.2"])


def h(**headers) -> list[tuple[bytes, bytes]]:
    return [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]


@pytest.mark.parametrize("peer, headers, client", [
    # an untrusted peer is the client, whatever it sends
    ("203.0.113.5", h(x_forwarded_for="1.2.3.4"), "203.0.113.5"),
    ("203.0.113.5", h(forwarded="for=1.2.3.4"), "203.0.113.5"),
    ("127.0.0.1", h(x_forwarded_for="1.2.3.4"), "127.0.0.1"),
    # a trusted proxy: the right-most hop that is not a trusted proxy
    ("10.0.0.1", h(x_forwarded_for="1.2.3.4"), "1.2.3.4"),
    ("10.0.0.1", h(x_forwarded_for="6.6.6.6, 1.2.3.4"), "1.2.3.4"),
    ("10.0.0.1", h(x_forwarded_for="6.6.6.6, 1.2.3.4, 10.1.1.1"), "1.2.3.4"),
    ("10.0.0.1", [(b"x-forwarded-for", b"6.6.6.6"), (b"x-forwarded-for", b"1.2.3.4")], "1.2.3.4"),
    ("10.0.0.1", h(x_forwarded_for="1.2.3.4:5678"), "1.2.3.4"),
    ("10.0.0.1", h(x_forwarded_for="[2001:db8::9]:443"), "2001:db8::9"),
    ("10.0.0.1", h(x_forwarded_for="::ffff:1.2.3.4"), "1.2.3.4"),
    ("10.0.0.1", h(x_forwarded_for="10.2.2.2, 10.3.3.3"), "10.2.2.2"),        # all trusted: the first
    ("10.0.0.1", h(x_forwarded_for="1.2.3.4, garbage"), "10.0.0.1"),         # no address: the hop that wrote it
    ("10.0.0.1", h(x_forwarded_for="garbage, 10.5.5.5"), "10.5.5.5"),
    ("10.0.0.1", [], "10.0.0.1"),                                             # the proxy's own request
    ("10.0.0.1", h(forwarded='for=6.6.6.6, for="[2001:db8::7]:4711";proto=https'), "2001:db8::7"),
    ("10.0.0.1", h(forwarded='For="1.2.3.4:80";by=10.0.0.1'), "1.2.3.4"),
    ("10.0.0.1", h(forwarded="for=unknown"), "10.0.0.1"),
    ("10.0.0.1", h(forwarded='for=_hidden, by="a,b"'), "10.0.0.1"),
    ("10.0.0.1", h(x_forwarded_for="1.2.3.4", forwarded="for=1.2.3.4"), "1.2.3.4"),  # they agree
    ("2001:db8:1::5", h(x_forwarded_for="2001:db8:2::1"), "2001:db8:2::1"),
    ("unknown", h(x_forwarded_for="1.2.3.4"), "unknown"),                     # no peer (a unix socket)
])
def test_the_client_is_the_right_most_untrusted_hop(peer, headers, client):
    assert PROXIES.client(peer, headers) == client


def test_no_proxy_is_trusted_by_default():
    assert TrustedProxies().client("127.0.0.1", h(x_forwarded_for="1.2.3.4", forwarded="for=5.6.7.8")) == "127.0.0.1"


def test_two_headers_naming_different_clients_are_a_conflict():
    with pytest.raises(ForwardedConflict) as err:
        PROXIES.client("10.0.0.1", h(x_forwarded_for="1.2.3.4", forwarded="for=6.6.6.6"))
    assert "6.6.6.6" not in str(err.value) and "1.2.3.4" not in str(err.value)


def test_forwarding_header_parsing():
    assert x_forwarded_for(["a, b", " c ,", ""]) == ["a", "b", "c"]
    assert forwarded_for(['for=a;proto=http, for="b;c", by=x', 'FOR="\\"q\\""']) == ["a", "b;c", "", '"q"']


@pytest.mark.parametrize("bad", ["10.0.0.1/8", "not-an-ip", "300.1.1.1", ""])
def test_trusted_proxies_are_checked(bad):
    with pytest.raises(ValueError, match="--trusted-proxies"):
        TrustedProxies([bad])
    with pytest.raises(ValueError, match="--trusted-proxies"):
        ServeLimits(trusted_proxies=(bad,))


@pytest.mark.parametrize("host, allowed, ok", [
    ("127.0.0.1:8080", default_allowed_hosts("127.0.0.1"), True),
    ("LOCALHOST", default_allowed_hosts("127.0.0.1"), True),
    ("[::1]:8080", default_allowed_hosts("127.0.0.1"), True),
    ("evil.example", default_allowed_hosts("127.0.0.1"), False),
    ("127.0.0.1.evil.example", default_allowed_hosts("127.0.0.1"), False),
    (None, default_allowed_hosts("127.0.0.1"), False),
    ("", default_allowed_hosts("127.0.0.1"), False),
    ("docs.example.com:443", ("docs.example.com",), True),
    ("a.docs.example.com", ("*.docs.example.com",), True),
    ("docs.example.com", ("*.docs.example.com",), False),
    ("evildocs.example.com", ("*.docs.example.com",), False),
    ("anything", ("*",), True),
])
def test_allowed_hosts(host, allowed, ok):
    assert host_allowed(host, allowed) is ok


def test_allowed_hosts_default_and_checks():
    assert default_allowed_hosts("127.0.0.1") == ("127.0.0.1", "localhost", "::1")
    assert default_allowed_hosts("0.0.0.0") == ("0.0.0.0", "localhost", "127.0.0.1", "::1")
    assert ServeLimits(allowed_hosts=("Docs.Example.com:8080", "[::1]")).allowed_hosts == ("docs.example.com", "::1")
    for bad in ((), ("*example.com",), ("a.*.com",), (":80",)):
        with pytest.raises(ValueError, match="--allowed-hosts"):
            ServeLimits(allowed_hosts=bad)


def test_security_headers_are_set_and_framing_forbidden():
    out = dict(secured([(b"content-type", b"application/json"), (b"x-frame-options", b"SAMEORIGIN")]))
    assert out[b"x-content-type-options"] == b"nosniff" and out[b"referrer-policy"] == b"no-referrer"
    assert out[b"x-frame-options"] == b"DENY" and out[b"content-security-policy"] == API_CSP.encode()
    kept = dict(secured([(b"content-security-policy", b"sandbox; default-src 'none';")]))
    assert kept[b"content-security-policy"] == b"sandbox; default-src 'none'; frame-ancestors 'none'"
    own = dict(secured([(b"Content-Security-Policy", b"default-src 'self'; frame-ancestors 'none'")]))
    assert own[b"content-security-policy"] == b"default-src 'self'; frame-ancestors 'none'"


def test_uvicorn_leaves_the_client_address_and_the_access_log_to_the_edge():
    config = uvicorn_config(object(), "127.0.0.1", 0, "info")
    assert config.proxy_headers is False and config.access_log is False
    assert config.log_config["loggers"]["vdgr.access"] == {"handlers": ["access"], "level": "INFO",
                                                            "propagate": False}


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--transport", "http"]])
def test_both_commands_take_the_guard_flags(command):
    base = [*command, "--index", "x", "--api-keys", "k"]
    assert guard_limits(make_parser().parse_args(base)) == ServeLimits()
    args = make_parser().parse_args(base + [
        "--host", "0.0.0.0", "--max-body-bytes", "4096", "--body-timeout", "0.5", "--auth-failures-per-minute", "0",
        "--trusted-proxies", "10.0.0.0/8, 192.0.2.1", "--allowed-hosts", "docs.example.com,*.corp.example"])
    assert guard_limits(args) == ServeLimits(max_body_bytes=4096, body_timeout_s=0.5, auth_failures_per_minute=0,
                                             trusted_proxies=("10.0.0.0/8", "192.0.2.1"),
                                             allowed_hosts=("docs.example.com", "*.corp.example"))
    args = make_parser().parse_args(base + ["--host", "0.0.0.0"])
    assert guard_limits(args).allowed_hosts == ("0.0.0.0", "localhost", "127.0.0.1", "::1")
