"""`vdgr index`, `update` and `gc` against an index another process is writing: a clear message
and exit status 2 (never a traceback), or a wait with --lock-timeout; concurrent updates lose
nothing."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from runners.cli import main
from tests.support.lock_holder import REPO, Holder
from tests.support.update_ops import apply_op, hashing_config, snapshot
from pipelines.run_build import run_build


@pytest.fixture
def built(tmp_path):
    corpus, index = str(tmp_path / "corpus"), str(tmp_path / "index")
    apply_op(corpus, ("write", "net/routers/a.md", 0, [0, 1]))
    apply_op(corpus, ("write", "hr/d.md", 1, [2]))
    run_build(hashing_config(corpus, index))
    return corpus, index


@pytest.mark.parametrize("command", ["index", "update", "gc"])
def test_busy_index_exits_with_a_message(built, capsys, command):
    corpus, index = built
    argv = {"index": ["index", corpus, "--index", index, "--embedding", "hashing", "-q"],
            "update": ["update", corpus, "--index", index, "--embedding", "hashing", "-q"],
            "gc": ["gc", "--index", index]}[command]
    holder = Holder(index)
    try:
        assert main(argv) == 2
    finally:
        holder.release()
    err = capsys.readouterr().err
    assert f"vdgr {command}: error: index {index} is being updated by test-holder (pid {holder.proc.pid}" in err
    assert "Traceback" not in err


def test_two_concurrent_updates_both_succeed_and_lose_nothing(built, tmp_path):
    corpus, index = built
    apply_op(corpus, ("write", "net/c.md", 2, [3]))
    apply_op(corpus, ("meta", "hr", "2.0"))
    cmd = [sys.executable, "-m", "runners.cli", "update", corpus, "--index", index, "--embedding", "hashing",
           "-q", "--lock-timeout", "300"]
    procs = [subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate() for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "Traceback" not in err
    # one applied the change, the other (after waiting) found nothing left to do
    assert sorted("index unchanged" in out for out, _ in outs) == [False, True]
    fresh = str(tmp_path / "fresh")
    run_build(hashing_config(corpus, fresh))
    assert snapshot(index) == snapshot(fresh)
    assert not os.listdir(os.path.join(index, "_staging")) if os.path.isdir(os.path.join(index, "_staging")) else True
