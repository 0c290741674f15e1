"""The knowledge base of one index build, and its swap when a new build is committed.

A :class:`Snapshot` is a :class:`KnowledgeBase` opened on one manifest (so on one set of table
versions and shards), a lock that runs its queries one at a time (a knowledge base's caches and
LLM usage counters are per query), and an LLM client of its own for streamed answers.

:class:`SnapshotHolder` keeps the current snapshot. ``check()`` reads the manifest's build id
and, when it changed, opens the new build *beside* the old one and then replaces the reference
(one assignment): a request takes ``current()`` once and uses that snapshot to the end, so it
sees exactly one manifest, while requests that started before the swap finish on the old one.
A background thread calls ``check()`` every ``poll_s`` seconds; a build that fails to open is
logged and counted, and the old snapshot keeps serving.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Callable, Optional

from schemas.config import QueryConfig
from schemas.errors import ConfigError, VdgrError
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.store.manifest import read_manifest

log = logging.getLogger("vdgr.serve")


@dataclass
class Snapshot:
    """One opened build; ``lock`` serializes its queries."""

    kb: KnowledgeBase
    answer_llm: Optional[object] = None        # LLMClient for streamed answers (own usage)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def build_id(self) -> str:
        return self.kb.reader.manifest.build_id


def open_snapshot(index: str, config: QueryConfig, embedder=None) -> Snapshot:
    """Open ``index`` as a snapshot, reusing ``embedder`` when it matches the build's model."""
    if embedder is not None:
        try:
            kb = KnowledgeBase.open(index, config, embedder=embedder)
        except ConfigError:          # rebuilt with another model: load that one
            kb = KnowledgeBase.open(index, config)
    else:
        kb = KnowledgeBase.open(index, config)
    answer_llm = None
    if config.llm is not None:
        from vdgr_core.llm.client import LLMClient
        answer_llm = LLMClient(config.llm)
    return Snapshot(kb, answer_llm)


class SnapshotHolder:
    """The current snapshot of ``index``; see the module docstring.

    Parameters
    ----------
    index : str
    opener : callable
        ``opener(index, embedder_or_None) -> Snapshot``.
    poll_s : float
        Seconds between manifest checks of the background thread (0: no thread).
    """

    def __init__(self, index: str, opener: Callable[[str, object], Snapshot], poll_s: float = 2.0):
        self.index = index
        self._opener = opener
        self._poll_s = poll_s
        self._listeners: list[Callable[[Snapshot], None]] = []
        self._reload_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.reload_failures = 0
        self.reloads = 0
        self._current = opener(index, None)

    def subscribe(self, listener: Callable[[Snapshot], None]) -> None:
        """Call ``listener(new_snapshot)`` after each swap."""
        self._listeners.append(listener)

    def current(self) -> Snapshot:
        """The snapshot a new request uses (take it once per request)."""
        return self._current

    def check(self) -> bool:
        """Swap to the build the manifest names now, if it changed; True if swapped.

        Raises
        ------
        VdgrError
            The new build cannot be opened (the old snapshot stays current).
        """
        with self._reload_lock:
            build_id = read_manifest(self.index).build_id
            if build_id == self._current.build_id:
                return False
            new = self._opener(self.index, self._current.kb.embedder)
            self._current = new
            self.reloads += 1
        log.info("serving index build %s", new.build_id)
        for listener in self._listeners:
            listener(new)
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                self.check()
            except (VdgrError, OSError, ValueError) as exc:
                self.reload_failures += 1
                log.error("index reload failed, still serving build %s: %s", self._current.build_id, exc)

    def start(self) -> "SnapshotHolder":
        """Start the background manifest checks (no-op when ``poll_s`` is 0)."""
        if self._poll_s > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="vdgr-reload", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
