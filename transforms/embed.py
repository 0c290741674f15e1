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


class _EmbedBatchDoFn(beam.DoFn):
    def __init__(self, config: BuildConfig):
        self._config = config
        self._computed = Metrics.counter("vdgr", "embeddings_computed")
        self._cached = Metrics.counter("vdgr", "embeddings_from_cache")

    def setup(self):
        self._cache = EmbeddingCache(self._config.index)

    def _embedder(self):  # called on the first cache miss only
        return process_embedder(self._config.embedding)

    def process(self, batch):
        batch = list(batch)
        result = embed_with_cache(self._embedder, self._config.embedding.dim, self._cache, batch)
        n_new = sum(result.computed)
        self._computed.inc(n_new)
        self._cached.inc(len(batch) - n_new)
        for key, vec, computed in zip(result.keys, result.vectors, result.computed):
            yield (key, vec)
            if computed:
                yield beam.pvalue.TaggedOutput(NEW_VECTORS, {"key": key, "vector": vec})


def length_bucket(text: str) -> int:
    """Batches hold texts of similar length, so a batch pads little (the model's cost is
    batch size x longest text; texts beyond ~2,000 characters are truncated by the model)."""
    return min(len(text) // 160, 12)


class EmbedTexts(beam.PTransform):
    """(key, text) -> (key, vector); newly computed vectors also on the ``new_vectors`` tag.

    Keys are ``embedding_key(model_id, text)``; equal texts are embedded once, in batches of
    texts of similar length.
    """

    def __init__(self, config: BuildConfig):
        super().__init__()
        self._config = config

    def expand(self, items):
        size = self._config.embedding.batch_size
        return (items
                | "Distinct texts" >> beam.Distinct()
                | "Length bucket" >> beam.Map(lambda kv: (length_bucket(kv[1]), kv))
                | "Batch similar lengths" >> beam.GroupIntoBatches(size)
                | "Drop bucket" >> beam.Values()
                | "Embed batch" >> beam.ParDo(_EmbedBatchDoFn(self._config))
                .with_outputs(NEW_VECTORS, main="vectors"))


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
        result = embed_with_cache(self._embedder, self._config.embedding.dim, self._cache,
                                  [(key, text) for key, text, _ in batch])
        n_new = sum(result.computed)
        self._computed.inc(n_new)
        self._cached.inc(len(batch) - n_new)
        for (key, _text, items), vec, computed in zip(batch, result.vectors, result.computed):
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

    The embedding and the join of :class:`EmbedTexts` followed by a ``CoGroupByKey`` of the
    items with the vectors, in one step: the items are grouped by key (``embedding_key`` of
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
