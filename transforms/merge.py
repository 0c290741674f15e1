"""Global merges as Beam combines: entity statistics and vectors, co-occurrence weights.

Both are ``CombinePerKey``: workers add up what their bundles saw before the shuffle, so what
crosses it is one accumulator per key and bundle, never a row per mention. Entity partials come
from two inputs (documents, and content rows with their vectors) flattened before the combine;
a runner lifts a combine into the stage that *reads* the flatten, which would hold every
partial first (Beam's in-process runner hands a stage its whole input), so each input is
added up per bundle where it is produced (:class:`CombineInBundle`) before the flatten.
"""
from __future__ import annotations

from collections import Counter

import apache_beam as beam
import numpy as np

from vdgr_core.indexing.entity_merge import EntityStats, entity_row, stats_row
from vdgr_core.indexing.per_document import (cooccurrence_pairs, cooccurrence_row, entity_partials,
                                             vector_partials)


class _CombineInBundleDoFn(beam.DoFn):
    """(key, value) -> (key, accumulator) per bundle: values of one key merged where they are
    produced, at most ``max_keys`` accumulators held (the oldest half emitted when full)."""

    def __init__(self, combine_fn: beam.CombineFn, max_keys: int):
        self._fn = combine_fn
        self._max_keys = max_keys

    def start_bundle(self):
        self._accs: dict = {}

    def process(self, element):
        key, value = element
        acc = self._accs.get(key)
        if acc is None:
            acc = self._accs[key] = self._fn.create_accumulator()
        self._accs[key] = self._fn.add_input(acc, value)
        if len(self._accs) > self._max_keys:
            for k in list(self._accs)[: self._max_keys // 2]:
                yield k, self._accs.pop(k)

    def finish_bundle(self):
        wrap = beam.transforms.window.GlobalWindows.windowed_value
        for k, acc in self._accs.items():
            yield wrap((k, acc))
        self._accs = {}


class CombineInBundle(beam.PTransform):
    """(key, value) -> (key, partial accumulator): a combine's inputs merged within each bundle.

    The output still needs the combine across bundles (``CombinePerKey`` with a combine fn
    whose inputs are accumulators, as :class:`_EntityStatsCombineFn`'s are)."""

    def __init__(self, combine_fn: beam.CombineFn, max_keys: int = 50_000):
        super().__init__()
        self._fn, self._max_keys = combine_fn, max_keys

    def expand(self, pcoll):
        merge = beam.ParDo(_CombineInBundleDoFn(self._fn, self._max_keys))
        if isinstance(self._fn, _EntityStatsCombineFn):          # keys (domain, name): EntityStatsCoder values
            merge = merge.with_output_types(beam.typehints.Tuple[beam.typehints.Tuple[str, str], EntityStats])
        return pcoll | "Merge in bundle" >> merge


class EntityStatsCoder(beam.coders.Coder):
    """:class:`EntityStats` as a tuple of primitives (Beam's fast coder), not a pickle.

    Accumulators cross every shuffle of the entity merge; pickling their ``Counter`` fields
    ran ``Counter.__reduce__`` in Python for each (~4% of a hashing build's samples).
    """

    _tuple = beam.coders.FastPrimitivesCoder()

    def encode(self, s: EntityStats) -> bytes:
        vector = None if s.vector_sum is None else np.ascontiguousarray(s.vector_sum, dtype=np.int64).tobytes()
        return self._tuple.encode((dict(s.names), dict(s.kinds), s.frequency, s.chunks, s.docs,
                                   float(s.best_score), vector, s.best_score_stale))

    def decode(self, encoded: bytes) -> EntityStats:
        names, kinds, frequency, chunks, docs, best, vector, stale = self._tuple.decode(encoded)
        return EntityStats(names=Counter(names), kinds=Counter(kinds), frequency=frequency, chunks=chunks,
                           docs=docs, best_score=best, best_score_stale=stale,
                           vector_sum=None if vector is None else np.frombuffer(vector, dtype=np.int64).copy())

    def is_deterministic(self) -> bool:
        return False            # values only: never a key

    def to_type_hint(self):
        return EntityStats


beam.coders.registry.register_coder(EntityStats, EntityStatsCoder)


class _EntityStatsCombineFn(beam.CombineFn):
    def get_accumulator_coder(self):
        return EntityStatsCoder()

    def create_accumulator(self):
        return EntityStats()

    def add_input(self, acc, partial):
        return acc.merge(partial)

    def merge_accumulators(self, accs):
        accs = iter(accs)
        out = next(accs)
        for a in accs:
            out.merge(a)
        return out

    def extract_output(self, acc):
        return acc


ENTITY_STATS = "entity_stats"


def _entity_rows(kv, chunk_counts, dim):
    (domain, norm), stats = kv
    yield entity_row(domain, norm, stats, chunk_counts.get(domain, 1), dim)
    yield beam.pvalue.TaggedOutput(ENTITY_STATS, stats_row(domain, norm, stats, dim))


class MergeEntities(beam.PTransform):
    """(annotated documents, content rows with vectors) -> entity rows (main output, with their
    vectors: the normalized sum of the vectors of the chunks that mention them) and
    ``entity_stats`` rows. Sums and counts come from a combine per (domain, normalized name):
    one partial per document (names, kinds, mentions, chunks, best score) and one vector per
    mentioning chunk (fixed point, so the sum does not depend on the order)."""

    def __init__(self, dim: int):
        super().__init__()
        self._dim = dim

    def expand(self, pcolls):
        documents, content_rows = pcolls
        chunk_counts = (documents
                        | "Chunks of document" >> beam.Map(lambda d: (d.domain, len(d.chunks)))
                        | "Chunks per domain" >> beam.CombinePerKey(sum))
        partials = (documents | "Document partials" >> beam.FlatMap(entity_partials)
                    | "Sum document partials" >> CombineInBundle(_EntityStatsCombineFn()),
                    content_rows | "Vector partials" >> beam.FlatMap(vector_partials)
                    | "Sum vector partials" >> CombineInBundle(_EntityStatsCombineFn()))
        return (partials
                | "All partials" >> beam.Flatten()
                | "Sum per entity" >> beam.CombinePerKey(_EntityStatsCombineFn())
                | "Entity rows" >> beam.FlatMap(_entity_rows, chunk_counts=beam.pvalue.AsDict(chunk_counts),
                                                dim=self._dim).with_outputs(ENTITY_STATS, main="entities"))


class CooccurrenceEdges(beam.PTransform):
    """Annotated documents -> co-occurrence edges: sentences with both entities, summed per
    (domain, pair)."""

    def expand(self, documents):
        return (documents
                | "Pairs" >> beam.FlatMap(cooccurrence_pairs)
                | "Sum sentences" >> beam.CombinePerKey(sum)
                | "Co-occurrence edge" >> beam.MapTuple(cooccurrence_row))
