"""The cluster tests' process support: a server whose port was taken between ``free_port`` and
its own bind is started again on another port instead of failing the module's setup."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.support.cluster import start_listening

SERVER = ("import socket, sys\n"
          "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
          "while True: s.accept()[0].close()\n")


def test_a_server_whose_port_was_taken_starts_again_on_another_port():
    taken = []
    holder = socket.socket()

    def spawn(port: int) -> subprocess.Popen:
        if not taken:                       # someone else binds the port first (and never listens)
            holder.bind(("127.0.0.1", port))
            taken.append(port)
        return subprocess.Popen([sys.executable, "-c", SERVER, str(port)], stderr=subprocess.DEVNULL,
                                start_new_session=True)

    try:
        port, proc = start_listening(spawn, "test server")
        try:
            assert port != taken[0]
            socket.create_connection(("127.0.0.1", port), timeout=10).close()
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    finally:
        holder.close()


def test_a_server_that_never_listens_is_an_error_after_the_tries(monkeypatch):
    import tests.support.cluster as cluster

    monkeypatch.setattr(cluster, "BIND_TRIES", 2)
    calls = []

    def spawn(port: int) -> subprocess.Popen:
        calls.append(port)
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])

    with pytest.raises(RuntimeError, match="broken server exited with 3"):
        start_listening(spawn, "broken server")
    assert len(calls) == 2
