"""Global dedup-merge of contents, directories and entities, keyed on their content ids."""
from __future__ import annotations

import apache_beam as beam

from schemas.tables import COOCCURS, HAS_ENTITY
from vdgr_core.ids import entity_id
from vdgr_core.indexing.entity_merge import EntityAccumulator, entity_row
from vdgr_core.indexing.rows import edge_row
from vdgr_core.indexing.tree_summary import merge_directory_nodes


def _first_chunk(kv):
    _, annotated = kv
    return min(annotated, key=lambda a: (a.chunk.source, a.chunk.position))


class DedupContents(beam.PTransform):
    """AnnotatedChunk keyed on chunk_id (= content + source): one per id."""

    def expand(self, annotated):
        return (annotated
                | "Key by chunk id" >> beam.Map(lambda a: (a.chunk.chunk_id, a))
                | "Group equal chunks" >> beam.GroupByKey()
                | "Keep one chunk" >> beam.Map(_first_chunk))


class DedupDirectories(beam.PTransform):
    """DirectoryNode keyed on node_id (= full path + version): one per id."""

    def expand(self, nodes):
        return (nodes
                | "Key by node id" >> beam.Map(lambda n: (n.node_id, n))
                | "Group equal nodes" >> beam.GroupByKey()
                | "Merge nodes" >> beam.MapTuple(lambda _, ns: merge_directory_nodes(ns)))


class _EntityCombineFn(beam.CombineFn):
    def create_accumulator(self):
        return EntityAccumulator()

    def add_input(self, acc, mention):
        return acc.add(mention)

    def merge_accumulators(self, accs):
        accs = list(accs)
        out = accs[0]
        for a in accs[1:]:
            out.merge(a)
        return out

    def extract_output(self, acc):
        return acc


def _entity_rows(kv, chunk_counts):
    (domain, norm), acc = kv
    return entity_row(domain, norm, acc, chunk_counts.get(domain, 1))


class MergeEntities(beam.PTransform):
    """Entity mentions -> one entity row per (domain, normalized name), plus existence edges."""

    def expand(self, annotated):
        mentions = annotated | "Entity mentions" >> beam.FlatMap(lambda a: a.mentions)
        chunk_counts = (annotated
                        | "Domain of chunk" >> beam.Map(lambda a: (a.chunk.domain, 1))
                        | "Chunks per domain" >> beam.CombinePerKey(sum))
        entities = (mentions
                    | "Key mention" >> beam.Map(lambda m: ((m.domain, m.norm), m))
                    | "Merge mentions" >> beam.CombinePerKey(_EntityCombineFn())
                    | "Entity row" >> beam.Map(_entity_rows, chunk_counts=beam.pvalue.AsDict(chunk_counts)))
        existence = mentions | "Existence edge" >> beam.Map(
            lambda m: edge_row(HAS_ENTITY, m.chunk_id, entity_id(m.domain, m.norm), m.domain, m.mentions))
        return entities, existence


class CooccurrenceEdges(beam.PTransform):
    """Sentence co-occurrence counts summed per (domain, a, b) into weighted entity edges."""

    def expand(self, annotated):
        return (annotated
                | "Pairs" >> beam.FlatMap(
                    lambda a: (((a.chunk.domain, x, y), n) for x, y, n in a.pairs))
                | "Sum sentences" >> beam.CombinePerKey(sum)
                | "Co-occurrence edge" >> beam.MapTuple(_cooccurrence_row))


def _cooccurrence_row(key, weight):
    domain, a, b = key
    src, dst = sorted((entity_id(domain, a), entity_id(domain, b)))
    return edge_row(COOCCURS, src, dst, domain, weight)
