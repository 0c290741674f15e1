"""Unsafe start-ups of `vdgr serve` and `vdgr mcp --transport http` are refused (issue 48):
beyond loopback, a keys file others may read or the demo keys stop the command with one line,
unless --insecure-demo, which says so loudly."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import runners.serve.startup as startup
from runners.cli import main
from runners.serve.auth import load_keys
from runners.serve.startup import DEMO_KEYS, is_loopback
from tests.support.live_server import write_keys
from tests.support.tiny_index import DIM

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "examples" / "keys.yaml"
COMMANDS = {"serve": ["serve"], "mcp": ["mcp", "--transport", "http"]}


@pytest.fixture
def started(monkeypatch):
    """The servers the commands would start (none starts: ``serve_forever`` is replaced)."""
    calls = []
    monkeypatch.setattr(startup, "serve_forever", lambda app, host, port, level: calls.append(host) or 0)
    return calls


def keys_file(tmp_path, mode: int, demo: bool = False) -> str:
    path = tmp_path / "keys.yaml"
    if demo:
        shutil.copy(DEMO, path)
    else:
        write_keys(str(path))
    os.chmod(path, mode)
    return str(path)


def run(command: str, index: str, keys: str, *extra: str) -> int:
    return main([*COMMANDS[command], "--index", index, "--api-keys", keys, "--embedding", "hashing",
                 "--embedding-dim", str(DIM), "--reload-interval", "0", *extra])


def test_the_demo_keys_are_the_ones_of_examples_keys_yaml():
    assert {k.key for k in load_keys(str(DEMO)).keys} == DEMO_KEYS


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True),
                                            ("[::1]", True), ("localhost", True), ("0.0.0.0", False),
                                            ("::", False), ("192.168.1.5", False), ("docs.example.com", False)])
def test_loopback(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize("mode, demo, reason", [(0o644, False, "readable by group or others (mode 0644"),
                                                (0o640, False, "mode 0640"),
                                                (0o600, True, "public demo keys"),
                                                (0o644, True, "readable by group or others")])
def test_an_unsafe_start_beyond_loopback_is_refused_in_one_line(served_index, tmp_path, capsys, started,
                                                                command, mode, demo, reason):
    keys = keys_file(tmp_path, mode, demo)
    assert run(command, served_index, keys, "--host", "0.0.0.0") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"vdgr {command}: error: refusing to listen on 0.0.0.0")
    assert reason in err and "--insecure-demo" in err
    assert "demo-staff-key-change-me" not in err and "staff-key-0123456789abcdef" not in err   # no key printed
    assert started == []


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_insecure_demo_starts_anyway_and_says_so_loudly(served_index, tmp_path, capsys, started, command):
    keys = keys_file(tmp_path, 0o644, demo=True)
    assert run(command, served_index, keys, "--host", "0.0.0.0", "--insecure-demo") == 0
    err = capsys.readouterr().err
    assert "WARNING: --insecure-demo" in err and "readable by group or others" in err and "demo keys" in err
    assert "Never do this with real data" in err
    assert started == ["0.0.0.0"]


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_safe_starts_are_not_refused(served_index, tmp_path, capsys, started, command):
    # loopback: the demo keys and a readable file are fine (the README's demo)
    assert run(command, served_index, keys_file(tmp_path, 0o644, demo=True)) == 0
    assert capsys.readouterr().err == ""
    # beyond loopback with a private file of real keys; a note names --allowed-hosts
    assert run(command, served_index, keys_file(tmp_path, 0o600), "--host", "0.0.0.0") == 0
    assert "--allowed-hosts" in capsys.readouterr().err
    assert run(command, served_index, keys_file(tmp_path, 0o600), "--host", "0.0.0.0",
               "--allowed-hosts", "docs.example.com") == 0
    assert capsys.readouterr().err == ""
    assert started == ["127.0.0.1", "0.0.0.0", "0.0.0.0"]


def test_a_readable_hs256_secret_is_refused_too(served_index, tmp_path, capsys, started):
    secret = tmp_path / "jwt.secret"
    secret.write_text("a-shared-secret-of-some-length")
    os.chmod(secret, 0o644)
    assert run("serve", served_index, keys_file(tmp_path, 0o600), "--host", "0.0.0.0", "--jwt-algorithm", "HS256",
               "--jwt-key-file", str(secret)) == 2
    assert f"--jwt-key-file {secret} is readable" in capsys.readouterr().err


def test_the_command_refuses_before_opening_anything(tmp_path):
    """The real command line, in its own process: one line, exit 2 (the index is not even read)."""
    keys = keys_file(tmp_path, 0o644)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run([sys.executable, "-m", "runners.cli", "serve", "--index", str(tmp_path / "none"),
                           "--api-keys", keys, "--host", "0.0.0.0"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "refusing to listen on 0.0.0.0" in done.stderr
