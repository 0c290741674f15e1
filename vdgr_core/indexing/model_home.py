"""One home for the embedding model of a process: loading, sharing, texts sent ahead, batching.

Every embedding a build or an update computes goes through here, whoever asks (a Beam worker's
DoFn in transforms/embed.py, the driver's first texts, an update's delta):

* :func:`process_embedder`: one embedder per process and configuration, loaded once and shared
  by its threads (a `vdgr watch` loads it once for all its polls); :func:`provided_embedder`
  lends one made elsewhere (the child process `vdgr index` starts early, runners/early_embedder.py);
* :class:`EmbeddingPrefetcher` (:func:`prefetcher_for`): texts sent ahead to an embedder that
  answers asynchronously, so a child process embeds while this one parses;
* :class:`VectorMemo`: the last vectors this process embedded or read, by key;
* :class:`BatchEmbedding`: a batch of (key, text, item) taken from the texts sent ahead, the
  memo, the index's embedding cache and the model for the rest, and the order in which batches
  are sent when a prefetcher is there (:meth:`BatchEmbedding.queue`).

Caches only: a vector depends on its text, the model and the precision, never on which of
these gave it.
"""
from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import numpy as np

from schemas.config import EmbeddingConfig, EmbedSettings
from vdgr_core.embedding import make_embedder, resolve_precision
from vdgr_core.indexing.embed_cache import EmbeddingCache, embed_with_cache
from vdgr_core.progress import PROGRESS

_MODELS: dict[str, object] = {}
_MODELS_LOCK = threading.Lock()


def _model_key(config: EmbeddingConfig) -> str:
    """The process's key of an embedding configuration (``precision="auto"`` resolved: the
    build resolves it, and a model provided before that is the same model)."""
    return resolve_precision(config).model_dump_json()


def process_embedder(config: EmbeddingConfig):
    """One embedder per worker process and configuration, loaded once.

    A cache only: results never depend on it. It outlives a pipeline on purpose, so a
    long-running `vdgr watch` (a new update pipeline per poll, same process) loads the model once.
    """
    key = _model_key(config)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = make_embedder(config)
        return _MODELS[key]


@contextlib.contextmanager
def provided_embedder(config: EmbeddingConfig, embedder):
    """Within the block, ``process_embedder(config)`` returns ``embedder``.

    `vdgr update` starts the model in a child process before it imports Beam and scans the
    corpus (vdgr_core.embedding_process); the in-process pipeline and the driver then share it.
    """
    key = _model_key(config)
    with _MODELS_LOCK:
        previous = _MODELS.get(key)
        _MODELS[key] = embedder
    try:
        yield embedder
    finally:
        with _MODELS_LOCK:
            if previous is None:
                _MODELS.pop(key, None)
            else:
                _MODELS[key] = previous
            for name in [n for n, p in _PREFETCHERS.items() if p._embedder is embedder]:
                del _PREFETCHERS[name]          # its vectors belong to this block's builds only


class EmbeddingPrefetcher:
    """Texts sent ahead to an embedder that answers asynchronously (``submit``), in batches.

    While the in-process pipeline parses and annotates, the chunk texts it will embed later are
    already known: sending them to the embedding child process then lets the child embed while
    this process parses (two cores at work instead of one, then the other). The embedding step
    takes a prefetched vector instead of computing it. A cache only: a text that was not
    prefetched is embedded as usual, and the vectors are the same model's.

    Parameters
    ----------
    embedder : object with ``submit(texts) -> Future``
    cache : EmbeddingCache
        Texts already in the index's embedding cache are not sent.
    window : int
        Texts per request. The whole window goes to the embedder at once: the local model
        fills its calls from one request's texts, and a small request leaves calls part-empty
        (with the earlier fixed-shape calls, requests of 64 of bench_embed's chunk texts ran at
        half the texts/s of requests of 600: hand runs, docs/DECISIONS.md).
    """

    def __init__(self, embedder, cache: EmbeddingCache, window: int = 1024):
        self._embedder, self._cache = embedder, cache
        self._window = window
        self._pending: dict[str, str] = {}
        self._futures: dict[str, tuple[object, int]] = {}
        self._lock = threading.Lock()

    #: texts waiting that make a request when the embedder has nothing to do: the first texts
    #: of a build go as soon as the child has loaded the model, not once a window has filled
    START_AT = 64

    def offer(self, key: str, text: str) -> None:
        # a text met again after its vector was taken is in the process memo: not sent again
        # (an element's texts are offered before the batches upstream of it are taken, so
        # without this check repeated texts were embedded once per batch: 12,193 embeddings
        # for 4,385 distinct texts on the 33 EManual manuals)
        if _MEMO.get(key) is not None:
            return
        with self._lock:
            if key in self._futures or key in self._pending:
                return
            self._pending[key] = text
            if len(self._pending) >= self._window or (len(self._pending) >= self.START_AT and self._idle()):
                self._flush_locked()

    def _idle(self) -> bool:
        return getattr(self._embedder, "idle", lambda: False)()

    def flush(self, at_least: int = 0) -> bool:
        """Send the texts waiting in the window, when there are at least ``at_least`` of them or
        the embedder has nothing to do; True when nothing is left waiting."""
        with self._lock:
            if len(self._pending) >= at_least or self._idle():
                self._flush_locked()
            return not self._pending

    def _flush_locked(self) -> None:
        if not self._pending:
            return
        cached = self._cache.lookup(list(self._pending))
        todo = [(k, t) for k, t in self._pending.items() if k not in cached]
        self._pending = {}
        if todo:
            PROGRESS.queued(len(todo))
            fut = self._embedder.submit([t for _, t in todo])
            fut.add_done_callback(lambda f, n=len(todo): PROGRESS.embedded(n))
            for i, (k, _) in enumerate(todo):
                self._futures[k] = (fut, i)

    def take(self, key: str):
        """The prefetched vector of ``key`` (waiting for it if needed), or None.

        A key still waiting in the window is sent first: otherwise the embedding step would
        compute it too, and the window would still send it later (one text embedded twice)."""
        with self._lock:
            if key in self._pending:
                self._flush_locked()
            entry = self._futures.pop(key, None)
        if entry is None:
            return None
        fut, i = entry
        return fut.result()[i]


_PREFETCHERS: dict[str, EmbeddingPrefetcher] = {}


def prefetcher_for(embed: EmbedSettings) -> Optional[EmbeddingPrefetcher]:
    """The process's prefetcher for ``embed``, when its embedder answers asynchronously.

    Only a provided embedder (``provided_embedder``: the child process `vdgr index` starts) is
    considered, so this never loads a model.
    """
    key = _model_key(embed.embedding)
    with _MODELS_LOCK:
        embedder = _MODELS.get(key)
        if embedder is None or not hasattr(embedder, "submit"):
            return None
        cache_key = key + "\x1f" + str(embed.index)
        if cache_key not in _PREFETCHERS or _PREFETCHERS[cache_key]._embedder is not embedder:
            _PREFETCHERS[cache_key] = EmbeddingPrefetcher(embedder, EmbeddingCache(embed.index))
        return _PREFETCHERS[cache_key]


class VectorMemo:
    """The last ``size`` vectors this process embedded or read, by embedding key (an LRU).

    Product manuals repeat most of their text across versions, and the texts of one bundle
    are embedded together: equal texts met again in this process are not embedded again.
    A cache only: results never depend on it.
    """

    def __init__(self, size: int = 65536):
        self._size = size
        self._data: "OrderedDict[str, np.ndarray]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str):
        with self._lock:
            v = self._data.get(key)
            if v is not None:
                self._data.move_to_end(key)
            return v

    def put(self, key: str, vector) -> None:
        with self._lock:
            self._data[key] = vector
            self._data.move_to_end(key)
            while len(self._data) > self._size:
                self._data.popitem(last=False)


_MEMO = VectorMemo()




@dataclass(frozen=True)
class EmbeddedBatchItems:
    """A batch's vectors by key, whether each was computed for this run, and the counts."""

    vectors: dict[str, np.ndarray]
    computed: frozenset[str]

    @property
    def n_computed(self) -> int:
        return len(self.computed)


class BatchEmbedding:
    """Batches of (key, text, item) embedded for one :class:`EmbedSettings`, in one process.

    A batch is taken from the texts sent ahead (prefetcher), the process memo, the index's
    embedding cache, and the model for the rest. With a prefetcher (an embedder in a child
    process), batches are taken one request behind the texts sent ahead: full batches queue (at
    most ``MAX_QUEUED``) until their texts not yet embedded number ``MIN_REQUEST`` or more (or
    the child has nothing to do); they are then sent as one request, and the batches of the
    request before it are taken. The child always has the next request waiting while this
    process takes vectors and makes batches, and requests are large enough to fill its model
    calls (taking each batch as it filled left the child idle between some 40 requests, the
    pipeline idle while each was embedded, and many requests of under 20 texts, each costing a
    full call per padded length: hand runs, docs/DECISIONS.md).
    """

    #: texts not yet embedded that make a request worth sending
    MIN_REQUEST = 256
    #: batches held at most before their texts are sent whatever their number
    MAX_QUEUED = 8

    def __init__(self, embed: EmbedSettings):
        self._embed = embed
        self._cache = EmbeddingCache(embed.index)
        self._queued: list[list] = []      # full batches whose texts were not sent yet
        self._in_flight: list[list] = []   # the batches of the newest request sent

    def queue(self, batch: list) -> list[list]:
        """Add a full batch; the batches to take now (in order)."""
        prefetcher = prefetcher_for(self._embed)
        if prefetcher is None:
            return [batch]
        self._queued.append(batch)
        if prefetcher.flush(0 if len(self._queued) >= self.MAX_QUEUED else self.MIN_REQUEST):
            previous, self._in_flight, self._queued = self._in_flight, self._queued, []
            return previous
        return []

    def drain(self, rest: list) -> list[list]:
        """Every batch still held, then ``rest``: what is left to take at the end of a bundle."""
        batches = [*self._in_flight, *self._queued, rest]
        self._in_flight, self._queued = [], []
        return batches

    def vectors(self, items: list) -> EmbeddedBatchItems:
        """The vector of every distinct key of ``items`` ((key, text, item) triples)."""
        texts: dict[str, str] = {}
        for key, text, _ in items:
            texts.setdefault(key, text)
        prefetcher = prefetcher_for(self._embed)
        found: dict[str, tuple[np.ndarray, bool]] = {}
        for key in texts:
            vec = prefetcher.take(key) if prefetcher is not None else None
            if vec is not None:
                found[key] = (vec, True)          # prefetched: computed for this build
                continue
            vec = _MEMO.get(key)
            if vec is not None:
                found[key] = (vec, False)
        rest = [(k, t) for k, t in texts.items() if k not in found]
        result = embed_with_cache(lambda: process_embedder(self._embed.embedding), self._embed.embedding.dim,
                                  self._cache, rest)
        found.update((k, (v, c)) for k, v, c in zip(result.keys, result.vectors, result.computed))
        for key, (vec, _computed) in found.items():
            _MEMO.put(key, vec)
        return EmbeddedBatchItems({k: v for k, (v, _) in found.items()},
                                  frozenset(k for k, (_, c) in found.items() if c))


def remembered(key: str):
    """The vector this process's memo holds for ``key``, or None."""
    return _MEMO.get(key)


__all__ = ["BatchEmbedding", "EmbeddedBatchItems", "EmbeddingPrefetcher", "VectorMemo", "prefetcher_for",
           "process_embedder", "provided_embedder", "remembered"]
