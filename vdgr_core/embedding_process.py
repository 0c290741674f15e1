"""An embedder loaded in a child process, started before it is needed.

Loading all-MiniLM-L6-v2 costs ~3 s, mostly importing torch and transformers: Python work that,
on a thread, would hold the GIL against the scan, the plan and the parsing it should overlap. A
child process loads it truly in parallel; the parent sends texts and receives vectors through a
pipe. `vdgr update` starts one before it knows whether anything needs embedding and stops it if
nothing does (a clean terminate, unlike a thread in the middle of an import).

The child runs the same embedder class with the same settings, so its vectors equal the ones an
in-process embedder computes.

Stopping: the child ignores SIGINT (Ctrl-C reaches the whole process group; the parent stops the
child itself, ``close``) and leaves quietly when the parent is gone. With a ``journal`` the
parent appends every (cache key, vector) the child returns to an Arrow stream file, so a build
that is interrupted keeps what it embedded (:func:`read_journal`, ``runners/early_embedder.py``).
"""
from __future__ import annotations

import collections
import multiprocessing
import os
from concurrent.futures import Future
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

from schemas.config import EmbeddingConfig
from schemas.errors import EmbeddingError


#: a request of fewer texts than this is embedded together with the small requests waiting
#: behind it, until the call holds this many texts: the local model fills its calls from one
#: request's texts (packed end to end, run on several threads at once), so many small requests
#: (one per Beam bundle) embedded one by one left calls part-empty and threads idle (measured
#: with the earlier fixed-shape calls). A request this large is embedded alone and answered at once:
#: merged with the requests behind it, it waited for theirs too (a build's last chunk texts
#: waited ~7 s for the directory texts sent after them; hand runs, docs/DECISIONS.md)
MERGE_BELOW = 512


def _next_call(waiting: "collections.deque[list]", small: int = MERGE_BELOW) -> list[list]:
    """Take from ``waiting`` the requests one call embeds, in order: the first, then, while
    the call has fewer than ``small`` texts, each next request of fewer than ``small`` texts."""
    requests = [waiting.popleft()]
    total = len(requests[0])
    while waiting and total < small and len(waiting[0]) < small:
        requests.append(waiting.popleft())
        total += len(requests[-1])
    return requests


#: test hook, like ``vdgr_core.store.failpoints``: when this environment variable names a file,
#: the child writes its pid there once it has answered its first request, then answers nothing
#: more until it is stopped (a test interrupts a build whose embedding has started, without a race)
PAUSE_ENV = "VDGR_EMBEDDER_PAUSE"


def _pause_here(path: str) -> None:
    import signal

    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(os.getpid()))
    os.replace(path + ".tmp", path)
    while True:
        signal.pause()


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel sends this process SIGTERM when the parent dies, however it died (a
    SIGKILLed parent cannot stop its child; without this the child finished its batch first).
    ``parent`` 0: not asked (the signal follows the parent *thread* that started the child, so
    it is asked only for a child started by the main thread)."""
    import ctypes
    import signal
    import sys

    if not parent or not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))     # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:           # it died before the request was made
        os._exit(0)


def _serve(config_json: str, conn, parent: int) -> None:
    """Child side: load the embedder, then answer ("embed", texts) until the pipe closes,
    one reply per request, in order; small requests that wait are embedded together
    (:func:`_next_call`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the parent stops us (close) on Ctrl-C
    _die_with_parent(parent)
    pause = os.environ.get(PAUSE_ENV)
    try:
        from vdgr_core.embedding import make_embedder

        embedder = make_embedder(EmbeddingConfig.model_validate_json(config_json))
    except BaseException as e:  # reported on the first request
        failure: Optional[str] = f"{type(e).__name__}: {e}"
        embedder = None
    else:
        failure = None
    waiting: "collections.deque[list]" = collections.deque()
    while True:
        try:
            if not waiting:
                waiting.append(conn.recv()[1])
            while conn.poll():                          # every request sent so far
                waiting.append(conn.recv()[1])
        except (EOFError, OSError):                     # the parent is gone
            return
        try:
            _answer(conn, embedder, failure, _next_call(waiting))
        except (BrokenPipeError, ConnectionError):      # the parent is gone: nothing to answer
            return
        if pause:
            _pause_here(pause)


def _answer(conn, embedder, failure: Optional[str], requests: list[list]) -> None:
    if failure is not None:
        for _ in requests:
            conn.send(("error", failure))
        return
    try:
        vectors = np.asarray(embedder.embed([t for r in requests for t in r]), dtype=np.float32)
    except Exception as e:
        for _ in requests:
            conn.send(("error", f"{type(e).__name__}: {e}"))
        return
    start = 0
    for r in requests:
        conn.send(("ok", vectors[start:start + len(r)]))
        start += len(r)


class EmbedderProcess:
    """An embedder in a child process (``spawn``: nothing of the parent's state is inherited).

    Parameters
    ----------
    config : EmbeddingConfig
        What the child loads (``make_embedder(config)``).
    journal : str, optional
        A local file: every (cache key, vector) the child returns is appended to it as an Arrow
        stream (:func:`read_journal`), so an interrupted build can keep what was embedded.

    Notes
    -----
    ``submit`` never blocks: requests are sent by a sender thread and answered in order (a
    reader thread resolves the futures), so the caller keeps working while the child embeds.
    ``embed`` is ``submit(...).result()``. Both may be called from several threads.
    """

    def __init__(self, config: EmbeddingConfig, journal: Optional[str] = None):
        import collections
        import queue
        import threading

        from vdgr_core.embedding import embedder_identity

        self.model_id, self.dim = embedder_identity(config)
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        parent = os.getpid() if threading.current_thread() is threading.main_thread() else 0
        self._proc = ctx.Process(target=_serve, args=(config.model_dump_json(), child, parent),
                                 name="vdgr-embedder", daemon=True)
        self._proc.start()
        child.close()
        self._lock = threading.Lock()
        self._inflight: "collections.deque[tuple[Future, list[str]]]" = collections.deque()
        self._outbox: "queue.Queue" = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._dead: Optional[str] = None
        self.journal = journal
        self._journal_writer = None
        #: texts the child has embedded for this process (the counter an interruption reports)
        self.embedded = 0

    @property
    def pid(self) -> Optional[int]:
        """The child's process id."""
        return self._proc.pid

    def _record(self, texts: list[str], vectors: np.ndarray) -> None:
        """Append (key, vector) rows to the journal (the receiving thread only)."""
        self.embedded += len(texts)
        if self.journal is None:
            return
        from schemas.tables import embedding_cache_schema
        from vdgr_core.embedding import embedding_key

        schema = embedding_cache_schema(self.dim)
        if self._journal_writer is None:
            os.makedirs(os.path.dirname(os.path.abspath(self.journal)), exist_ok=True)
            self._journal_writer = pa.ipc.new_stream(self.journal, schema)
        keys = pa.array([embedding_key(self.model_id, t) for t in texts], pa.string())
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        rows = pa.FixedSizeListArray.from_arrays(flat, self.dim)
        self._journal_writer.write_batch(pa.record_batch([keys, rows.cast(schema.field(1).type)], schema=schema))

    def _start_threads(self) -> None:
        import threading

        for target, name in ((self._send_loop, "vdgr-embedder-send"), (self._receive_loop, "vdgr-embedder-recv")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def _send_loop(self) -> None:
        while True:
            texts = self._outbox.get()
            if texts is None:
                return
            try:
                self._conn.send(("embed", texts))
            except (OSError, ValueError):
                return

    def _receive_loop(self) -> None:
        while True:
            try:
                kind, payload = self._conn.recv()
            except (EOFError, OSError, ValueError) as e:
                with self._lock:
                    self._dead = f"the embedding process died: {e!r}"
                    pending, self._inflight = list(self._inflight), type(self._inflight)()
                for fut, _ in pending:
                    if not fut.done():
                        fut.set_exception(EmbeddingError(self._dead))
                return
            with self._lock:
                fut, texts = self._inflight.popleft()
            if kind == "ok":
                self._record(texts, payload)
                fut.set_result(payload)
            else:
                fut.set_exception(EmbeddingError(f"the embedding process failed: {payload}"))

    def submit(self, texts: Sequence[str]) -> "Future":
        """Ask for the vectors of ``texts``; the future holds a float32 array, one row per text."""
        fut: Future = Future()
        if len(texts) == 0:
            fut.set_result(np.zeros((0, self.dim), dtype=np.float32))
            return fut
        with self._lock:
            if self._dead is not None:              # never leave a caller waiting on a dead child
                fut.set_exception(EmbeddingError(self._dead))
                return fut
            if not self._threads:
                self._start_threads()
            texts = list(texts)
            self._inflight.append((fut, texts))
            self._outbox.put(texts)              # FIFO: answered in the order submitted
        return fut

    def idle(self) -> bool:
        """True when no request is waiting for its answer (the child has nothing to do)."""
        with self._lock:
            return not self._inflight

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` (float32, one row per text).

        Raises
        ------
        EmbeddingError
            If the child failed to load the model, failed on these texts, or died.
        """
        return self.submit(texts).result()

    def close(self) -> None:
        """Stop the child at once (it holds nothing to flush; it may still be loading)."""
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc.join()
        self._outbox.put(None)
        self._conn.close()
        for t in self._threads:          # the receiver writes the journal: let it finish
            t.join(timeout=1.0)
        # bounded: close() also runs in a signal handler, which may have interrupted this very
        # thread inside ``with self._lock`` (submit)
        locked = self._lock.acquire(timeout=1.0)
        try:
            writer, self._journal_writer = self._journal_writer, None
        finally:
            if locked:
                self._lock.release()
        if writer is not None:
            writer.close()

    def __enter__(self) -> "EmbedderProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_journal(path: str) -> Optional[pa.Table]:
    """The (key, vector) rows of an embedding journal, or None when there is none.

    A journal cut short (its writer was killed) yields the batches written whole before the cut.
    """
    if not os.path.exists(path):
        return None
    batches = []
    try:
        with pa.ipc.open_stream(path) as reader:
            schema = reader.schema
            for batch in reader:
                batches.append(batch)
    except (pa.ArrowInvalid, OSError):
        if not batches:
            return None
    return pa.Table.from_batches(batches, schema=schema)


__all__ = ["EmbedderProcess", "PAUSE_ENV", "read_journal"]
