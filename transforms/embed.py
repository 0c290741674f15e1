"""Batched embeddings with a content-hash cache (a second build embeds nothing)."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils import shared

from schemas.config import BuildConfig
from vdgr_core.embedding import make_embedder
from vdgr_core.indexing.embed_cache import EmbeddingCache, embed_with_cache

NEW_VECTORS = "new_vectors"


class _ModelHolder:
    """Weak-referenceable holder so beam.utils.shared can share one model per process."""

    def __init__(self, embedder):
        self.embedder = embedder


class _EmbedBatchDoFn(beam.DoFn):
    def __init__(self, config: BuildConfig, shared_handle):
        self._config = config
        self._shared = shared_handle
        self._computed = Metrics.counter("vdgr", "embeddings_computed")
        self._cached = Metrics.counter("vdgr", "embeddings_from_cache")

    def setup(self):
        cfg = self._config.embedding
        self._holder = self._shared.acquire(lambda: _ModelHolder(make_embedder(cfg)), tag=repr(cfg))
        self._cache = EmbeddingCache(self._config.index)

    def process(self, batch):
        result = embed_with_cache(self._holder.embedder, self._cache, batch)
        n_new = sum(result.computed)
        self._computed.inc(n_new)
        self._cached.inc(len(batch) - n_new)
        for key, vec, computed in zip(result.keys, result.vectors, result.computed):
            yield (key, vec)
            if computed:
                yield beam.pvalue.TaggedOutput(NEW_VECTORS, {"key": key, "vector": [float(x) for x in vec]})


class EmbedTexts(beam.PTransform):
    """(key, text) -> (key, vector); newly computed vectors also on the ``new_vectors`` tag.

    Keys are ``embedding_key(model_id, text)``; equal texts are embedded once.
    """

    def __init__(self, config: BuildConfig):
        super().__init__()
        self._config = config

    def expand(self, items):
        size = self._config.embedding.batch_size
        return (items
                | "Distinct texts" >> beam.Distinct()
                | "Batch texts" >> beam.BatchElements(min_batch_size=min(8, size), max_batch_size=size)
                | "Embed batch" >> beam.ParDo(_EmbedBatchDoFn(self._config, shared.Shared()))
                .with_outputs(NEW_VECTORS, main="vectors"))
