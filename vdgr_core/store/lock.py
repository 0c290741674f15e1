"""One writer per index: the lock every build, update and garbage collection holds.

The lock records who writes (owner, user, host, pid, start time) so that a second writer can say
``index ... is being updated by vdgr update (pid 4242 on host build-3, user ci) since ...``;
it waits up to a timeout for the holder to finish, then raises :class:`IndexBusyError`.

Local folder (guaranteed exclusion): ``INDEX/_writer.lock`` is held with ``flock(LOCK_EX)``
and holds the owner's record as JSON. The kernel drops an flock when its process dies, SIGKILL
included, so a lock whose owner is gone is free at once: recovering a stale lock needs no pid
check and has no race (the record a dead owner left is only reported, then overwritten). The
file is never deleted (deleting a locked file lets two processes lock two different files).
flock works on local file systems and on NFS v4 (Linux maps it to POSIX locks).

Object store (best effort): ``INDEX/_writer.lock`` is a lease object with the same record and a
``renewed`` time that a heartbeat thread refreshes. It is taken when absent or stale (its owner
is on this host and its pid is gone, or it was not renewed for ``stale_after_s``), then read back
to check that this writer's token won. ``pyarrow.fs`` has no conditional put (``If-None-Match``,
``x-goog-if-generation-match``), so two writers that take a free lease at the same instant can
both believe they hold it; the manifest generations (``store/manifest.py``) then make the loser's
commit fail, loudly, unless both also commit within the same instant. Run one scheduler per
object-store index.

The lock is re-entrant within a process (a nested ``IndexLock`` on an index this process holds
is a no-op), so ``run_update`` may call ``run_build``. While held it is the index's commit guard
(``store/manifest.py``, :class:`CommitGuard`): it remembers the manifest generation it started
from, and ``write_manifest`` refuses to replace a manifest that changed since. A writer hands
the held lock down to its commit, which passes it as ``write_manifest(..., guard=lock)``
(``run_build``, ``run_update``, ``gc``); nothing registers it anywhere else, so a commit is
checked exactly when its caller says so. This module imports the manifest module, never the
reverse.
"""
from __future__ import annotations

import datetime as _dt
import getpass
import json
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable, Optional

from schemas.errors import ConcurrentCommitError, IndexBusyError, StoreUnreachableError
from vdgr_core.store.location import IndexLocation
from vdgr_core.store.manifest import current_generation, index_key

LOCK_NAME = "_writer.lock"
DEFAULT_STALE_AFTER_S = 300.0        # object stores: a lease not renewed for this long is stale
_POLL_S = 0.2


@dataclass(frozen=True)
class LockRecord:
    """Who holds (or last held) the lock of an index."""

    owner: str            # what writes: "vdgr index", "vdgr update", "vdgr gc"
    user: str
    host: str
    pid: int
    started: str          # ISO time, UTC
    renewed: float = 0.0  # Unix time of the last heartbeat (object stores)
    token: str = ""       # tells this holder's lease from another's (object stores)

    def describe(self) -> str:
        return f"{self.owner} (pid {self.pid} on host {self.host}, user {self.user}) since {self.started}"

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> Optional["LockRecord"]:
        """The record in ``data``, or None for an empty or unreadable one (a crash mid-write)."""
        try:
            d = json.loads(data.decode("utf-8"))
            return cls(**{k: d[k] for k in ("owner", "user", "host", "pid", "started")},
                       renewed=float(d.get("renewed", 0.0)), token=str(d.get("token", "")))
        except (ValueError, KeyError, TypeError):
            return None


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid()) if hasattr(os, "getuid") else "?"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # alive, another user's
        return True
    return True


class _Held:
    """A lock this process holds: its backend, nesting depth and the manifest generation; the
    commit guard of its index (``store/manifest.py``, :class:`CommitGuard`)."""

    def __init__(self, release: Callable[[], None], generation: int, lost: Callable[[], Optional[str]]):
        self.release = release
        self.generation = generation
        self.lost = lost
        self.depth = 1

    def expected_generation(self) -> int:
        """The manifest generation this lock expects.

        Raises
        ------
        ConcurrentCommitError
            When the lease of an object-store index was taken over by another writer.
        """
        why = self.lost()
        if why:
            raise ConcurrentCommitError(why)
        return self.generation

    def committed(self, generation: int) -> None:
        """This process committed manifest ``generation`` under the lock."""
        self.generation = generation


_HELD: dict[str, _Held] = {}         # index_key -> the lock this process holds (re-entrancy)
_HELD_LOCK = threading.Lock()


class IndexLock:
    """Context manager: hold the writer lock of ``index_uri`` for the block.

    Parameters
    ----------
    index_uri : str
        Local folder (created if missing) or object-store URI of the index.
    owner : str
        What is writing, as shown to a waiting writer ("vdgr update").
    timeout_s : float
        How long to wait for another holder; 0 fails at once.
    stale_after_s : float
        Object stores: a lease not renewed for this long is taken over.

    Raises
    ------
    IndexBusyError
        When another process still holds the lock after ``timeout_s``; the message names it.
    """

    def __init__(self, index_uri: str, owner: str, timeout_s: float = 0.0,
                 stale_after_s: float = DEFAULT_STALE_AFTER_S):
        self.index_uri = str(index_uri)
        self.owner = owner
        self.timeout_s = max(0.0, float(timeout_s))
        self.stale_after_s = stale_after_s
        self._key = index_key(self.index_uri)

    def _record(self, token: str = "") -> LockRecord:
        return LockRecord(owner=self.owner, user=_user(), host=socket.gethostname(), pid=os.getpid(),
                          started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                          renewed=time.time(), token=token)

    def __enter__(self) -> "IndexLock":
        with _HELD_LOCK:
            held = _HELD.get(self._key)
            if held is not None:
                held.depth += 1
                return self
        loc = IndexLocation(self.index_uri)
        if loc.remote:
            try:
                release, lost = _acquire_remote(self, loc)
            except OSError as e:            # not FileNotFoundError: a missing lock is read as free
                raise StoreUnreachableError(f"cannot take the writer lock of {self.index_uri}: "
                                            f"{' '.join(str(e).split())[:400]}") from e
        else:
            release, lost = _acquire_local(self, loc)
        try:
            generation = current_generation(self.index_uri)
        except BaseException:
            release()
            raise
        held = _Held(release, generation, lost)
        with _HELD_LOCK:
            _HELD[self._key] = held
        return self

    def __exit__(self, *exc) -> None:
        with _HELD_LOCK:
            held = _HELD[self._key]
            held.depth -= 1
            if held.depth:
                return
            del _HELD[self._key]
        held.release()

    def _held(self) -> _Held:
        with _HELD_LOCK:
            held = _HELD.get(self._key)
        if held is None:
            raise RuntimeError(f"the writer lock of {self.index_uri} is not held")
        return held

    def expected_generation(self) -> int:
        """The manifest generation a commit under this lock must find (``CommitGuard``)."""
        return self._held().expected_generation()

    def committed(self, generation: int) -> None:
        """Record a commit of ``generation`` under this lock (``CommitGuard``)."""
        self._held().committed(generation)

    def _busy(self, holder: Optional[LockRecord], waited: float) -> IndexBusyError:
        who = holder.describe() if holder else "another process"
        return IndexBusyError(f"index {self.index_uri} is being updated by {who}; "
                              f"gave up after waiting {waited:.0f} s (--lock-timeout)")


def _acquire_local(lock: IndexLock, loc: IndexLocation):
    import fcntl

    os.makedirs(loc.uri, exist_ok=True)
    path = os.path.join(loc.uri, LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)     # not inherited by child processes
    t0 = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - t0
                if waited >= lock.timeout_s:
                    with open(path, "rb") as f:
                        raise lock._busy(LockRecord.from_bytes(f.read()), waited) from None
                time.sleep(min(_POLL_S, lock.timeout_s - waited))
        os.ftruncate(fd, 0)
        os.pwrite(fd, lock._record().to_bytes(), 0)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise

    def release() -> None:
        try:
            os.ftruncate(fd, 0)          # the record describes a live holder only
        finally:
            os.close(fd)                 # drops the flock

    return release, lambda: None


def _acquire_remote(lock: IndexLock, loc: IndexLocation):
    token = f"{socket.gethostname()}:{os.getpid()}:{time.time_ns()}"
    t0 = time.monotonic()
    while True:
        holder = _read_lease(loc)
        if holder is None or _stale(holder, lock.stale_after_s):
            loc.write_whole(LOCK_NAME, lock._record(token).to_bytes())
            mine = _read_lease(loc)
            if mine is not None and mine.token == token:
                break
            holder = mine
        waited = time.monotonic() - t0
        if waited >= lock.timeout_s:
            raise lock._busy(holder, waited)
        time.sleep(min(_POLL_S * 5, max(0.0, lock.timeout_s - waited)))
    stop = threading.Event()
    lost: list[str] = []

    def heartbeat() -> None:
        while not stop.wait(lock.stale_after_s / 3):
            current = _read_lease(loc)
            if current is None or current.token != token:
                lost.append(f"the writer lease of {loc.uri} was taken over by "
                            f"{current.describe() if current else 'nobody'}; this commit is abandoned")
                return
            loc.write_whole(LOCK_NAME, LockRecord(**{**asdict(current), "renewed": time.time()}).to_bytes())

    beat = threading.Thread(target=heartbeat, name="vdgr-lock-heartbeat", daemon=True)
    beat.start()

    def release() -> None:
        stop.set()
        beat.join()
        current = _read_lease(loc)
        if current is not None and current.token == token:
            loc.delete(LOCK_NAME)

    return release, lambda: lost[0] if lost else None


def _read_lease(loc: IndexLocation) -> Optional[LockRecord]:
    try:
        return LockRecord.from_bytes(loc.read_bytes(LOCK_NAME))
    except FileNotFoundError:
        return None


def _stale(record: LockRecord, stale_after_s: float) -> bool:
    if record.host == socket.gethostname() and not _pid_alive(record.pid):
        return True
    return time.time() - record.renewed > stale_after_s


def read_lock_record(index_uri: str) -> Optional[LockRecord]:
    """The record in the lock of ``index_uri``: its holder, or None when it is free or absent.

    A local lock file keeps its record only while held (and after its holder was killed);
    whether it is held is known only by trying, see :class:`IndexLock`.
    """
    loc = IndexLocation(index_uri)
    try:
        return LockRecord.from_bytes(loc.read_bytes(LOCK_NAME))
    except FileNotFoundError:
        return None


__all__ = ["IndexLock", "LockRecord", "LOCK_NAME", "read_lock_record"]
