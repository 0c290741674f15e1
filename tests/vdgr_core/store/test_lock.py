"""The writer lock: one writer per index, a clear message for the second, recovery when the
holder is gone, and manifest generations that are never replaced by an older writer."""
from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading

import pytest

from schemas.errors import ConcurrentCommitError, IndexBusyError
from tests.support.lock_holder import REPO, Holder
from vdgr_core.store import manifest as manifest_module
from vdgr_core.store.location import IndexLocation
from vdgr_core.store.lock import LOCK_NAME, IndexLock, LockRecord, read_lock_record
from vdgr_core.store.manifest import Manifest, current_generation, read_manifest, write_manifest


def _manifest(build_id: str) -> Manifest:
    return Manifest(build_id=build_id, table_versions={}, tantivy_shards={}, embedding_model="m", dim=8,
                    domains=(), counts={})


def test_second_writer_gets_a_clear_message_naming_the_holder(tmp_path):
    index = str(tmp_path / "index")
    holder = Holder(index)
    try:
        with pytest.raises(IndexBusyError) as e:
            with IndexLock(index, "vdgr update", timeout_s=0):
                pass
        msg = str(e.value)
        assert f"is being updated by test-holder (pid {holder.proc.pid} on host {socket.gethostname()}" in msg
        assert "since 20" in msg and "--lock-timeout" in msg
        record = read_lock_record(index)
        assert (record.owner, record.pid) == ("test-holder", holder.proc.pid)
    finally:
        holder.release()
    with IndexLock(index, "vdgr update"):
        assert read_lock_record(index).pid == os.getpid()
    assert read_lock_record(index) is None          # released: no holder recorded


def test_waiting_writer_gets_the_lock_when_the_holder_finishes(tmp_path):
    index = str(tmp_path / "index")
    holder = Holder(index)
    got = []

    def wait_for_it():
        with IndexLock(index, "vdgr gc", timeout_s=120):
            got.append(read_lock_record(index).owner)

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    holder.release()
    waiter.join()
    assert got == ["vdgr gc"]


def test_lock_of_a_killed_holder_is_recovered_at_once(tmp_path):
    index = str(tmp_path / "index")
    holder = Holder(index)
    holder.kill()                                    # SIGKILL: no cleanup ran
    assert read_lock_record(index).pid == holder.proc.pid      # its record is left behind
    with IndexLock(index, "vdgr index", timeout_s=0):
        assert read_lock_record(index).pid == os.getpid()


def test_lock_is_reentrant_in_one_process(tmp_path):
    index = str(tmp_path / "index")
    with IndexLock(index, "vdgr update"):
        with IndexLock(index, "vdgr index"):        # run_update falling back to run_build
            pass
        assert read_lock_record(index).owner == "vdgr update"


def _lease(index: str, **fields) -> None:
    record = LockRecord(owner="other", user="u", host=socket.gethostname(), pid=1, started="2020-01-01T00:00:00",
                        renewed=0.0, token="theirs")
    IndexLocation(index).write_whole(LOCK_NAME, dataclasses.replace(record, **fields).to_bytes())


def test_object_store_lease_busy_and_stale(tmp_path):
    """On an object store (file:// takes that path) the lock is a lease object."""
    import time

    index = "file://" + str(tmp_path / "bucket" / "index")
    alive = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        _lease(index, pid=alive.pid, renewed=time.time())             # a live process of this host
        with pytest.raises(IndexBusyError, match=f"being updated by other \\(pid {alive.pid}"):
            with IndexLock(index, "vdgr update", timeout_s=0):
                pass
    finally:
        alive.stdin.close()
        alive.wait()
    _lease(index, pid=alive.pid, renewed=time.time())                 # its owner is gone now
    with IndexLock(index, "vdgr update", timeout_s=0):
        assert read_lock_record(index).pid == os.getpid()
    assert read_lock_record(index) is None                            # released: the object is deleted
    _lease(index, host="elsewhere", renewed=time.time())               # another host, renewed just now
    with pytest.raises(IndexBusyError):
        with IndexLock(index, "vdgr update", timeout_s=0):
            pass
    _lease(index, host="elsewhere", renewed=time.time() - 3600)       # not renewed for an hour
    with IndexLock(index, "vdgr update", timeout_s=0, stale_after_s=300):
        assert read_lock_record(index).owner == "vdgr update"


@pytest.mark.parametrize("remote", [False, True], ids=["local", "object-store"])
def test_manifest_generations_never_go_back(tmp_path, remote):
    index = ("file://" if remote else "") + str(tmp_path / "index")
    assert current_generation(index) == -1
    assert write_manifest(index, _manifest("a")).generation == 1
    assert write_manifest(index, _manifest("b"), expect_generation=1).generation == 2
    with pytest.raises(ConcurrentCommitError, match="changed during this commit"):
        write_manifest(index, _manifest("stale"), expect_generation=1)
    assert (read_manifest(index).build_id, read_manifest(index).generation) == ("b", 2)
    with IndexLock(index, "vdgr update") as lock:  # the lock expects the generation it saw
        write_manifest(index, _manifest("c"), guard=lock)
        write_manifest(index, _manifest("d"), guard=lock)      # its own commits move the expectation along
    assert (read_manifest(index).build_id, read_manifest(index).generation) == ("d", 4)
    if remote:
        names = IndexLocation(index).list_names("manifests")
        assert names == [f"{g:012d}.json" for g in (1, 2, 3, 4)]
        assert not IndexLocation(index).create_if_absent("manifests/000000000004.json", b"{}")


def test_manifest_without_generation_counts_as_zero(tmp_path):
    index = str(tmp_path / "index")
    text = _manifest("old").to_json().replace('"generation": 0,', "")
    assert '"generation"' not in text
    IndexLocation(index).write_whole("manifest.json", text.encode())
    assert current_generation(index) == 0
    assert write_manifest(index, _manifest("new"), expect_generation=0).generation == 1


class _Guard:
    """A commit guard of a writer that read generation ``expect``."""

    def __init__(self, expect):
        self.expect, self.written = expect, []

    def expected_generation(self):
        return self.expect

    def committed(self, generation):
        self.written.append(generation)


def test_the_commit_guard_is_passed_explicitly(tmp_path):
    index = str(tmp_path / "index")
    guard = _Guard(-1)                               # read "no manifest"
    assert write_manifest(index, _manifest("a"), guard=guard).generation == 1
    assert guard.written == [1]
    with pytest.raises(ConcurrentCommitError, match="changed during this commit"):
        write_manifest(index, _manifest("stale"), guard=_Guard(0))
    with IndexLock(index, "vdgr update") as lock:   # the held lock is a guard
        assert lock.expected_generation() == 1
        write_manifest(index, _manifest("b"), guard=lock)
        assert lock.expected_generation() == 2
    assert write_manifest(index, _manifest("c")).generation == 3


@pytest.mark.parametrize("remote", [False, True], ids=["local", "object-store"])
def test_a_commit_under_the_lock_after_a_writer_that_bypassed_it_fails(tmp_path, remote):
    index = ("file://" if remote else "") + str(tmp_path / "index")
    write_manifest(index, _manifest("a"))
    with IndexLock(index, "vdgr update") as lock:
        write_manifest(index, _manifest("other"))     # a writer that bypassed the lock: generation 2
        with pytest.raises(ConcurrentCommitError, match="expected 1"):
            write_manifest(index, _manifest("b"), guard=lock)
    assert read_manifest(index).build_id == "other"


def test_write_manifest_without_a_guard_consults_no_global_state(tmp_path):
    """With neither ``expect_generation`` nor ``guard`` nothing is checked, even while this
    process holds the index lock: no registry of held locks is consulted."""
    index = str(tmp_path / "index")
    write_manifest(index, _manifest("a"))
    with IndexLock(index, "vdgr update") as lock:
        write_manifest(index, _manifest("other"))     # moves the generation the lock expects
        assert write_manifest(index, _manifest("b")).generation == 3     # unchecked: not refused
        with pytest.raises(ConcurrentCommitError):
            write_manifest(index, _manifest("c"), guard=lock)        # the guard, passed, still sees it
    assert read_manifest(index).build_id == "b"
    assert not [n for n in vars(manifest_module) if "guard" in n.lower() and n != "CommitGuard"]
    assert not [n for n, v in vars(manifest_module).items()
                if isinstance(v, (dict, list, set)) and not n.startswith("__")], "module-level mutable state"


def test_a_writer_whose_object_store_lease_was_taken_over_cannot_commit(tmp_path):
    """The heartbeat finds another writer's token in the lease; the next guarded commit fails."""
    import time

    index = "file://" + str(tmp_path / "bucket" / "index")
    write_manifest(index, _manifest("a"))
    with IndexLock(index, "vdgr update", timeout_s=0, stale_after_s=0.03) as lock:
        _lease(index, host="elsewhere", renewed=time.time() + 3600)   # another writer takes the lease
        deadline = time.monotonic() + 60
        while True:                                   # the heartbeat (every 10 ms) notices
            try:
                lock.expected_generation()
            except ConcurrentCommitError:
                break
            assert time.monotonic() < deadline, "the heartbeat never noticed the lease was taken over"
            threading.Event().wait(0.01)
        with pytest.raises(ConcurrentCommitError, match="taken over"):
            write_manifest(index, _manifest("b"), guard=lock)
    assert read_manifest(index).build_id == "a"


def test_the_manifest_module_does_not_import_the_lock():
    code = ("import sys, vdgr_core.store.manifest, vdgr_core.store.writer; "
            "assert 'vdgr_core.store.lock' not in sys.modules, 'manifest imports the lock'")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
