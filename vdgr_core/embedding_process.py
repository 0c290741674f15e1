"""An embedder loaded in a child process, started before it is needed.

Loading all-MiniLM-L6-v2 costs ~3 s, mostly importing torch and transformers: Python work that,
on a thread, would hold the GIL against the scan, the plan and the parsing it should overlap. A
child process loads it truly in parallel; the parent sends texts and receives vectors through a
pipe. `vdgr update` starts one before it knows whether anything needs embedding and stops it if
nothing does (a clean terminate, unlike a thread in the middle of an import).

The child runs the same embedder class with the same settings, so its vectors equal the ones an
in-process embedder computes.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import Future
from typing import Optional, Sequence

import numpy as np

from schemas.config import EmbeddingConfig
from schemas.errors import EmbeddingError


#: the child embeds the requests waiting in its pipe together, up to this many texts: the
#: local model fills each fixed-shape call from texts of one padded length, so many small
#: requests (one per Beam bundle) embedded one by one left most calls part-empty
MERGE_TEXTS = 4096


def _waiting_requests(conn, first: list, limit: int) -> list[list]:
    """``first`` and the requests already waiting in ``conn`` (without blocking), in order,
    until their texts number ``limit`` or more."""
    requests, total = [first], len(first)
    while total < limit and conn.poll():
        kind, payload = conn.recv()
        requests.append(payload)
        total += len(payload)
    return requests


#: set in the child before torch loads, unless the user set them: OpenMP threads sleep between
#: parallel regions instead of spinning. The child shares the cores with the pipeline it
#: serves; spinning threads took a core from it (a build of the 33 EManual manuals on 2 AVX2
#: cores: 109 s -> 95 s, CPU time 184 s -> 159 s; embedding alone ~3% slower)
CHILD_ENVIRONMENT = {"OMP_WAIT_POLICY": "PASSIVE"}


def _serve(config_json: str, conn) -> None:
    """Child side: load the embedder, then answer ("embed", texts) until the pipe closes,
    one reply per request, embedding the requests that wait together (MERGE_TEXTS)."""
    import os

    for name, value in CHILD_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    try:
        from vdgr_core.embedding import make_embedder

        embedder = make_embedder(EmbeddingConfig.model_validate_json(config_json))
    except BaseException as e:  # reported on the first request
        failure: Optional[str] = f"{type(e).__name__}: {e}"
        embedder = None
    else:
        failure = None
    while True:
        try:
            kind, payload = conn.recv()
        except EOFError:
            return
        if failure is not None:
            conn.send(("error", failure))
            continue
        requests = _waiting_requests(conn, payload, MERGE_TEXTS)
        try:
            vectors = np.asarray(embedder.embed([t for r in requests for t in r]), dtype=np.float32)
        except Exception as e:
            for _ in requests:
                conn.send(("error", f"{type(e).__name__}: {e}"))
            continue
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

    Notes
    -----
    ``submit`` never blocks: requests are sent by a sender thread and answered in order (a
    reader thread resolves the futures), so the caller keeps working while the child embeds.
    ``embed`` is ``submit(...).result()``. Both may be called from several threads.
    """

    def __init__(self, config: EmbeddingConfig):
        import collections
        import queue
        import threading

        from vdgr_core.embedding import embedder_identity

        self.model_id, self.dim = embedder_identity(config)
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(config.model_dump_json(), child),
                                 name="vdgr-embedder", daemon=True)
        self._proc.start()
        child.close()
        self._lock = threading.Lock()
        self._inflight: "collections.deque[Future]" = collections.deque()
        self._outbox: "queue.Queue" = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._dead: Optional[str] = None

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
                for fut in pending:
                    if not fut.done():
                        fut.set_exception(EmbeddingError(self._dead))
                return
            with self._lock:
                fut = self._inflight.popleft()
            if kind == "ok":
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
            self._inflight.append(fut)
            self._outbox.put(list(texts))        # FIFO: answered in the order submitted
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

    def __enter__(self) -> "EmbedderProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["EmbedderProcess"]
