"""Global entity merge: mentions of one (domain, normalized name) become one entity node."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from vdgr_core.entities import entity_importance
from vdgr_core.ids import entity_id
from vdgr_core.indexing.annotate import EntityMention


@dataclass
class EntityAccumulator:
    """Mergeable statistics of one entity (used as a Beam CombineFn accumulator)."""

    names: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)
    frequency: int = 0
    chunk_ids: set = field(default_factory=set)
    doc_ids: set = field(default_factory=set)
    best_score: float = 0.0

    def add(self, m: EntityMention) -> "EntityAccumulator":
        return self.add_values(m.name, m.kind, m.score, m.mentions, m.chunk_id, m.doc_id)

    def add_values(self, name: str, kind: str, score: float, mentions: int, chunk_id: str,
                   doc_id: str) -> "EntityAccumulator":
        """``add`` without building an EntityMention (an update adds tens of thousands)."""
        self.names[name] += mentions
        self.kinds[kind] += 1
        self.frequency += mentions
        self.chunk_ids.add(chunk_id)
        self.doc_ids.add(doc_id)
        if score > self.best_score:
            self.best_score = score
        return self

    def merge(self, other: "EntityAccumulator") -> "EntityAccumulator":
        self.names.update(other.names)
        self.kinds.update(other.kinds)
        self.frequency += other.frequency
        self.chunk_ids |= other.chunk_ids
        self.doc_ids |= other.doc_ids
        self.best_score = max(self.best_score, other.best_score)
        return self


def _most_common(c: Counter) -> str:
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def merge_mentions(mentions: Iterable[EntityMention]) -> EntityAccumulator:
    acc = EntityAccumulator()
    for m in mentions:
        acc.add(m)
    return acc


def entity_row(domain: str, norm: str, acc: EntityAccumulator, n_chunks_in_domain: int) -> dict:
    """The entities-table row (vector added later from its chunks)."""
    kind = _most_common(acc.kinds)
    importance = entity_importance(kind, acc.frequency, len(acc.chunk_ids), max(1, n_chunks_in_domain))
    if kind == "llm":
        importance = acc.best_score
    return {
        "entity_id": entity_id(domain, norm),
        "name": _most_common(acc.names),
        "norm": norm,
        "domain": domain,
        "kind": kind,
        "importance": float(importance),
        "frequency": acc.frequency,
        "chunk_frequency": len(acc.chunk_ids),
        "doc_frequency": len(acc.doc_ids),
    }
