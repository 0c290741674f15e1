"""Embedding steps: texts sent ahead, and rows embedded in batches (vdgr_core/indexing/model_home.py).

The model, its sharing between threads, the texts sent ahead and the batching rules live in
``vdgr_core/indexing/model_home.py``; these DoFns only wire them into a pipeline and count.
"""
from __future__ import annotations

from typing import Callable

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.config import EmbedSettings
from vdgr_core.indexing.model_home import BatchEmbedding, prefetcher_for

NEW_VECTORS = "new_vectors"


class _PrefetchDoFn(beam.DoFn):
    """Pass-through: offers each element's (key, text) pairs to the prefetcher, if there is one."""

    def __init__(self, embed: EmbedSettings, keys_and_texts: Callable):
        self._embed = embed
        self._keys_and_texts = keys_and_texts

    def start_bundle(self):
        self._prefetcher = prefetcher_for(self._embed)

    def process(self, element):
        if self._prefetcher is not None:
            for key, text in self._keys_and_texts(element):
                self._prefetcher.offer(key, text)
        yield element

    def finish_bundle(self):
        if self._prefetcher is not None:
            self._prefetcher.flush()


class PrefetchEmbeddings(beam.PTransform):
    """Elements unchanged; their texts (``keys_and_texts(element)`` -> [(key, text)]) sent ahead
    to an asynchronous embedder (see ``EmbeddingPrefetcher``)."""

    def __init__(self, embed: EmbedSettings, keys_and_texts: Callable):
        super().__init__()
        self._embed = embed
        self._keys_and_texts = keys_and_texts

    def expand(self, pcoll):
        return pcoll | "Send texts ahead" >> beam.ParDo(_PrefetchDoFn(self._embed, self._keys_and_texts))


class _EmbedBatchesDoFn(beam.DoFn):
    """(key, text, item) -> ``make_row(item, vector)``, embedded in batches of distinct texts
    (``BatchEmbedding``: what is taken from where, and when a batch is taken); newly computed
    vectors also go to the ``new_vectors`` output for the cache."""

    def __init__(self, embed: EmbedSettings, make_row: Callable, buffer_size: int):
        self._embed = embed
        self._make_row = make_row
        self._buffer_size = buffer_size
        self._computed = Metrics.counter("vdgr", "embeddings_computed")
        self._cached = Metrics.counter("vdgr", "embeddings_from_cache")

    def setup(self):
        self._batches = BatchEmbedding(self._embed)

    def start_bundle(self):
        self._items = []

    def process(self, element):
        self._items.append(element)
        if len(self._items) >= self._buffer_size:
            batch, self._items = self._items, []
            for b in self._batches.queue(batch):
                yield from self._flush(b)

    def finish_bundle(self):
        wrap = beam.transforms.window.GlobalWindows.windowed_value
        batches, self._items = self._batches.drain(self._items), []
        for out in [o for b in batches for o in self._flush(b)]:
            if isinstance(out, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(out.tag, wrap(out.value))
            else:
                yield wrap(out)

    def _flush(self, items):
        if not items:
            return
        got = self._batches.vectors(items)
        self._computed.inc(got.n_computed)
        self._cached.inc(len(got.vectors) - got.n_computed)
        for key in sorted(got.computed):
            yield beam.pvalue.TaggedOutput(NEW_VECTORS, {"key": key, "vector": got.vectors[key]})
        for key, _text, item in items:
            yield self._make_row(item, got.vectors[key])


class EmbedInBatches(beam.PTransform):
    """(key, text, item) -> rows ``make_row(item, vector)`` (main output) and the newly computed
    (key, vector) on ``new_vectors``. No shuffle: each bundle embeds its own items in batches of
    ``buffer_size``, equal texts once per batch (and once per process while the memo holds them).
    """

    def __init__(self, embed: EmbedSettings, make_row: Callable, buffer_size: int = 512):
        super().__init__()
        self._embed = embed
        self._make_row = make_row
        self._buffer_size = buffer_size

    def expand(self, items):
        return items | "Embed and make rows" >> beam.ParDo(
            _EmbedBatchesDoFn(self._embed, self._make_row, self._buffer_size)).with_outputs(
            NEW_VECTORS, main="rows")
