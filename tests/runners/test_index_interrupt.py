"""SIGTERM (or Ctrl-C: the same handler) of `vdgr index`: the embedding child is gone within 2 s,
one line is printed, and the next run does not embed again what was embedded.

Integration: the local model runs in the embedding child (only the local model has one).
"""
from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time

import pytest

from runners.early_embedder import interrupted_line
from tests.support.corpus import write_corpus
from vdgr_core.embedding_process import PAUSE_ENV

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = {f"manuals/widget{i}.md": (f"# Widget {i}\n\n## Ports\n\nWidget {i} connects to port {i} and blinks "
                                   f"twice.\n\n## Reset\n\nHold the button of widget {i} for {i} seconds.\n")
         for i in range(12)}


def _index(corpus: str, index: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "runners.cli", "index", corpus, "--index", index],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_file(path: str, proc: subprocess.Popen, timeout_s: float) -> str:
    """The contents of ``path`` once it exists (the child's marker); fails if the build ends first."""
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the embedding child never answered"
        time.sleep(0.05)
    with open(path, encoding="utf-8") as f:
        return f.read()


def _gone_within(pid: int, timeout_s: float) -> bool:
    """Wait on ``pid`` (a pidfd turns readable when the process exits), at most ``timeout_s``."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout_s)
        return bool(readable)
    finally:
        os.close(fd)


def test_sigterm_stops_the_embedding_child_and_the_next_run_resumes_from_the_cache(tmp_path):
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index, marker = str(tmp_path / "index"), str(tmp_path / "embedding-started")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}

    # the child answers its first request, writes its pid to the marker and answers nothing more
    first = _index(corpus, index, {**env, PAUSE_ENV: marker})
    child_pid = int(_wait_for_file(marker, first, timeout_s=240))
    first.send_signal(signal.SIGTERM)
    assert _gone_within(child_pid, 2.0), "the embedding child outlived the build by 2 s"
    out, err = first.communicate(timeout=60)
    assert first.returncode == 128 + signal.SIGTERM
    ours = [line for line in err.splitlines() if line.strip() and not line.startswith("[vdgr] ")]
    assert len(ours) == 1 and "Traceback" not in err, err
    kept = int(re.search(r"([\d,]+) embedded texts? kept", ours[0]).group(1).replace(",", ""))
    assert kept > 0 and ours[0] == interrupted_line("index", kept)
    assert not os.path.exists(os.path.join(index, "manifest.json"))      # nothing committed
    assert not [f for f in os.listdir(os.path.join(index, "_staging")) if f.startswith("embedding-journal")]

    # the rerun embeds only what the first run had not: computed + kept = every distinct text
    second = _index(corpus, index, env)
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    computed = int(re.search(r"embeddings\s+([\d,]+) computed", out).group(1).replace(",", ""))
    from schemas import tables as T
    from vdgr_core.store.lance_store import connect

    distinct = connect(index).open_table(T.EMBEDDING_CACHE).count_rows()
    assert computed + kept == distinct
    assert computed < distinct
