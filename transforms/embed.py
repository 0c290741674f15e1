"""Batched embeddings with a content-hash cache (a second build embeds nothing)."""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Mapping

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.config import BuildConfig
from vdgr_core.embedding import make_embedder
from vdgr_core.indexing.embed_cache import EmbeddingCache, embed_with_cache

NEW_VECTORS = "new_vectors"


_MODELS: dict[str, object] = {}
_MODELS_LOCK = threading.Lock()


def process_embedder(config):
    """One embedder per worker process and configuration, loaded once.

    A cache only: results never depend on it. It outlives a pipeline on purpose, so a
    long-running `vdgr watch` (a new update pipeline per poll, same process) loads the model once.
    """
    key = config.model_dump_json()
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = make_embedder(config)
        return _MODELS[key]


@contextlib.contextmanager
def provided_embedder(config, embedder):
    """Within the block, ``process_embedder(config)`` returns ``embedder``.

    `vdgr update` starts the model in a child process before it imports Beam and scans the
    corpus (vdgr_core.embedding_process); the in-process pipeline and the driver then share it.
    """
    key = config.model_dump_json()
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
    batch_size : int
        Texts per request; a window of ``window`` texts is sorted by length first, so a batch
        pads little.
    """

    def __init__(self, embedder, cache: EmbeddingCache, batch_size: int, window: int = 512):
        self._embedder, self._cache = embedder, cache
        self._batch_size, self._window = batch_size, window
        self._pending: dict[str, str] = {}
        self._futures: dict[str, tuple[object, int]] = {}
        self._lock = threading.Lock()

    def offer(self, key: str, text: str) -> None:
        with self._lock:
            if key in self._futures or key in self._pending:
                return
            self._pending[key] = text
            if len(self._pending) >= self._window:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._pending:
            return
        cached = self._cache.lookup(list(self._pending))
        todo = sorted(((k, t) for k, t in self._pending.items() if k not in cached), key=lambda kt: -len(kt[1]))
        self._pending = {}
        for start in range(0, len(todo), self._batch_size):
            part = todo[start:start + self._batch_size]
            fut = self._embedder.submit([t for _, t in part])
            for i, (k, _) in enumerate(part):
                self._futures[k] = (fut, i)

    def take(self, key: str):
        """The prefetched vector of ``key`` (waiting for it if needed), or None."""
        with self._lock:
            entry = self._futures.pop(key, None)
        if entry is None:
            return None
        fut, i = entry
        return fut.result()[i]


_PREFETCHERS: dict[str, EmbeddingPrefetcher] = {}


def prefetcher_for(config: BuildConfig):
    """The process's prefetcher for ``config``, when its embedder answers asynchronously.

    Only a provided embedder (``provided_embedder``: the child process `vdgr index` starts) is
    considered, so this never loads a model.
    """
    key = config.embedding.model_dump_json()
    with _MODELS_LOCK:
        embedder = _MODELS.get(key)
        if embedder is None or not hasattr(embedder, "submit"):
            return None
        cache_key = key + "\x1f" + str(config.index)
        if cache_key not in _PREFETCHERS or _PREFETCHERS[cache_key]._embedder is not embedder:
            _PREFETCHERS[cache_key] = EmbeddingPrefetcher(embedder, EmbeddingCache(config.index),
                                                          config.embedding.batch_size)
        return _PREFETCHERS[cache_key]


class _PrefetchDoFn(beam.DoFn):
    """Pass-through: offers each element's (key, text) to the prefetcher, if there is one."""

    def __init__(self, config: BuildConfig, key_and_text: Callable):
        self._config = config
        self._key_and_text = key_and_text

    def start_bundle(self):
        self._prefetcher = prefetcher_for(self._config)

    def process(self, element):
        if self._prefetcher is not None:
            self._prefetcher.offer(*self._key_and_text(element))
        yield element

    def finish_bundle(self):
        if self._prefetcher is not None:
            self._prefetcher.flush()


class PrefetchEmbeddings(beam.PTransform):
    """Elements unchanged; their texts sent ahead to an asynchronous embedder (see EmbeddingPrefetcher)."""

    def __init__(self, config: BuildConfig, key_and_text: Callable):
        super().__init__()
        self._config = config
        self._key_and_text = key_and_text

    def expand(self, pcoll):
        return pcoll | "Send texts ahead" >> beam.ParDo(_PrefetchDoFn(self._config, self._key_and_text))


def length_bucket(text: str) -> int:
    """Batches hold texts of similar length, so a batch pads little (the model's cost is
    batch size x longest text; texts beyond ~2,000 characters are truncated by the model)."""
    return min(len(text) // 160, 12)


class _EmbedRowsDoFn(beam.DoFn):
    """A batch of distinct texts, each with the items that need its vector -> their rows."""

    def __init__(self, config: BuildConfig, make_rows: Mapping[str, Callable]):
        self._config = config
        self._make_rows = dict(make_rows)
        self._computed = Metrics.counter("vdgr", "embeddings_computed")
        self._cached = Metrics.counter("vdgr", "embeddings_from_cache")

    def setup(self):
        self._cache = EmbeddingCache(self._config.index)

    def _embedder(self):  # called on the first cache miss only
        return process_embedder(self._config.embedding)

    def process(self, batch):
        batch = list(batch)
        prefetcher = prefetcher_for(self._config)
        ready = {}
        if prefetcher is not None:
            for key, _text, _items in batch:
                vec = prefetcher.take(key)
                if vec is not None:
                    ready[key] = vec
        rest = [(key, text) for key, text, _ in batch if key not in ready]
        result = embed_with_cache(self._embedder, self._config.embedding.dim, self._cache, rest)
        found = {k: (v, c) for k, v, c in zip(result.keys, result.vectors, result.computed)}
        found.update((k, (v, True)) for k, v in ready.items())     # prefetched: computed for this build
        n_new = sum(1 for _, c in found.values() if c)
        self._computed.inc(n_new)
        self._cached.inc(len(batch) - n_new)
        for key, _text, items in batch:
            vec, computed = found[key]
            if computed:
                yield beam.pvalue.TaggedOutput(NEW_VECTORS, {"key": key, "vector": vec})
            for tag, item in items:
                yield beam.pvalue.TaggedOutput(tag, self._make_rows[tag](item, vec))


def _group_items(kv):
    """(key, [(text, tag, item), ...]) -> (length bucket, (key, text, [(tag, item), ...]))."""
    key, grouped = kv
    grouped = list(grouped)
    text = grouped[0][0]
    return length_bucket(text), (key, text, [(tag, item) for _, tag, item in grouped])


class EmbedRows(beam.PTransform):
    """(key, (text, tag, item)) -> rows ``make_rows[tag](item, vector)`` on output ``tag``.

    Embedding and joining the vectors back to the items in one step: the items are grouped by key (``embedding_key`` of
    the text, so equal texts are embedded once), the groups batched by text length, each batch
    embedded (cached) and every item turned into its row there, so vectors never go through a
    shuffle. Newly computed vectors are also on the ``new_vectors`` output.
    """

    def __init__(self, config: BuildConfig, make_rows: Mapping[str, Callable]):
        super().__init__()
        self._config = config
        self._make_rows = dict(make_rows)

    def expand(self, items):
        size = self._config.embedding.batch_size
        return (items
                | "Group equal texts" >> beam.GroupByKey()
                | "Length bucket" >> beam.Map(_group_items)
                | "Batch similar lengths" >> beam.GroupIntoBatches(size)
                | "Drop bucket" >> beam.Values()
                | "Embed and make rows" >> beam.ParDo(_EmbedRowsDoFn(self._config, self._make_rows))
                .with_outputs(NEW_VECTORS, *sorted(self._make_rows)))
