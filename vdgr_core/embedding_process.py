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
from typing import Optional, Sequence

import numpy as np

from schemas.config import EmbeddingConfig
from schemas.errors import EmbeddingError


def _serve(config_json: str, conn) -> None:
    """Child side: load the embedder, then answer ("embed", texts) until the pipe closes."""
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
        try:
            conn.send(("ok", np.asarray(embedder.embed(payload), dtype=np.float32)))
        except Exception as e:
            conn.send(("error", f"{type(e).__name__}: {e}"))


class EmbedderProcess:
    """An embedder in a child process (``spawn``: nothing of the parent's state is inherited).

    Parameters
    ----------
    config : EmbeddingConfig
        What the child loads (``make_embedder(config)``).

    Notes
    -----
    ``embed`` may be called from several threads; calls are serialized.
    """

    def __init__(self, config: EmbeddingConfig):
        from vdgr_core.embedding import embedder_identity

        self.model_id, self.dim = embedder_identity(config)
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(config.model_dump_json(), child),
                                 name="vdgr-embedder", daemon=True)
        self._proc.start()
        child.close()
        import threading

        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` (float32, one row per text).

        Raises
        ------
        EmbeddingError
            If the child failed to load the model, failed on these texts, or died.
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            try:
                self._conn.send(("embed", list(texts)))
                kind, payload = self._conn.recv()
            except (EOFError, OSError) as e:
                raise EmbeddingError(f"the embedding process died: {e}") from e
        if kind != "ok":
            raise EmbeddingError(f"the embedding process failed: {payload}")
        return payload

    def close(self) -> None:
        """Stop the child at once (it holds nothing to flush; it may still be loading)."""
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc.join()
        self._conn.close()

    def __enter__(self) -> "EmbedderProcess":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["EmbedderProcess"]
