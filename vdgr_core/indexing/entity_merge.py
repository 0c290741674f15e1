"""Global entity merge: mentions of one (domain, normalized name) become one entity node.

:class:`EntityStats` is what the merge adds up per entity. It is a Beam combine accumulator
(the build sums per-document partials and per-chunk vectors on workers) and it is kept in the
``entity_stats`` table, so an update subtracts the leaving chunks' share and adds the arriving
ones' without reading the rest of the domain:

* name and kind counts (the entity's name and kind are the most frequent ones), mentions,
  chunks and documents that mention it, the best score of its LLM mentions (the importance of
  an entity of kind "llm"; a maximum, so an update that removes it reads that entity's
  remaining mentions again);
* the sum of the vectors of the chunks that mention it, in fixed point (int64, 2**40 per unit):
  integer sums do not depend on order, so any partition of the work, and any sequence of
  updates, gives bit-identical entity vectors (the normalized sum).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

import numpy as np

from vdgr_core.entities import entity_importance
from vdgr_core.ids import entity_id
from vdgr_core.indexing.annotate import EntityMention

FIXED_POINT_SCALE = float(1 << 40)


def fixed_point(vector) -> np.ndarray:
    """``vector`` (unit float32) as int64 fixed point: exact, order-independent sums."""
    return np.rint(np.asarray(vector, dtype=np.float64) * FIXED_POINT_SCALE).astype(np.int64)


def unit_vector(vector_sum: Optional[np.ndarray], dim: int) -> np.ndarray:
    """The normalized float32 vector of a fixed-point sum (zeros for no sum)."""
    if vector_sum is None:
        return np.zeros(dim, dtype=np.float32)
    v = np.asarray(vector_sum, dtype=np.float64) / FIXED_POINT_SCALE
    norm = float(np.linalg.norm(v))
    return (v / norm if norm > 0 else v).astype(np.float32)


@dataclass
class EntityStats:
    """Mergeable (and, for an update, subtractable) statistics of one entity."""

    names: Counter = field(default_factory=Counter)     # surface form -> mentions
    kinds: Counter = field(default_factory=Counter)     # kind -> chunks
    frequency: int = 0                                  # mentions
    chunks: int = 0                                     # chunks that mention it
    docs: int = 0                                       # documents that mention it
    best_score: float = 0.0                             # best score of an LLM mention (kind "llm")
    vector_sum: Optional[np.ndarray] = None             # int64 fixed point, or None
    best_score_stale: bool = False                      # a subtraction removed the best score

    @classmethod
    def of_document(cls, mentions: Iterable[EntityMention]) -> "EntityStats":
        """The partial of one document: its chunks' mentions of one entity (no vectors)."""
        s = cls(docs=1)
        for m in mentions:
            s.names[m.name] += m.mentions
            s.kinds[m.kind] += 1
            s.frequency += m.mentions
            s.chunks += 1
            if m.kind == "llm" and m.score > s.best_score:
                s.best_score = m.score
        return s

    def add_vector(self, fixed: np.ndarray) -> "EntityStats":
        if self.vector_sum is None:
            self.vector_sum = np.array(fixed, dtype=np.int64)
        else:
            self.vector_sum += fixed
        return self

    def merge(self, other: "EntityStats") -> "EntityStats":
        self.names.update(other.names)
        self.kinds.update(other.kinds)
        self.frequency += other.frequency
        self.chunks += other.chunks
        self.docs += other.docs
        self.best_score = max(self.best_score, other.best_score)
        self.best_score_stale = self.best_score_stale or other.best_score_stale
        if other.vector_sum is not None:
            self.add_vector(other.vector_sum)
        return self

    def subtract(self, other: "EntityStats") -> "EntityStats":
        """Remove ``other``'s share (an update's leaving chunks). The best score is a maximum:
        if ``other`` held it, ``best_score_stale`` is set and the caller recomputes it."""
        self.names.subtract(other.names)
        self.kinds.subtract(other.kinds)
        self.names = +self.names          # drop zero counts
        self.kinds = +self.kinds
        self.frequency -= other.frequency
        self.chunks -= other.chunks
        self.docs -= other.docs
        if other.best_score > 0 and other.best_score >= self.best_score:
            self.best_score_stale = True
        if other.vector_sum is not None:
            self.vector_sum = (self.vector_sum if self.vector_sum is not None
                               else np.zeros_like(other.vector_sum)) - other.vector_sum
        return self

    @property
    def empty(self) -> bool:
        return self.chunks <= 0


def _most_common(c: Counter) -> str:
    return sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def entity_row(domain: str, norm: str, stats: EntityStats, n_chunks_in_domain: int, dim: int) -> dict:
    """The entities-table row."""
    kind = _most_common(stats.kinds)
    importance = entity_importance(kind, stats.frequency, stats.chunks, max(1, n_chunks_in_domain))
    if kind == "llm":
        importance = stats.best_score
    return {
        "entity_id": entity_id(domain, norm),
        "name": _most_common(stats.names),
        "norm": norm,
        "domain": domain,
        "kind": kind,
        "importance": float(importance),
        "frequency": stats.frequency,
        "chunk_frequency": stats.chunks,
        "doc_frequency": stats.docs,
        "vector": unit_vector(stats.vector_sum, dim),
    }


def _counts(c: Counter) -> list[dict]:
    return [{"value": k, "count": int(v)} for k, v in sorted(c.items())]


def stats_row(domain: str, norm: str, stats: EntityStats, dim: int) -> dict:
    """The ``entity_stats`` row: everything an update needs to change the entity in place."""
    return {
        "entity_id": entity_id(domain, norm),
        "domain": domain,
        "norm": norm,
        "names": _counts(stats.names),
        "kinds": _counts(stats.kinds),
        "frequency": stats.frequency,
        "chunks": stats.chunks,
        "docs": stats.docs,
        "best_score": float(stats.best_score),
        "vector_sum": (stats.vector_sum if stats.vector_sum is not None
                       else np.zeros(dim, dtype=np.int64)),
    }


def stats_from_row(row: Mapping) -> EntityStats:
    """The EntityStats an ``entity_stats`` row holds."""
    return EntityStats(
        names=Counter({x["value"]: x["count"] for x in row["names"] or ()}),
        kinds=Counter({x["value"]: x["count"] for x in row["kinds"] or ()}),
        frequency=int(row["frequency"]), chunks=int(row["chunks"]), docs=int(row["docs"]),
        best_score=float(row["best_score"]),
        vector_sum=np.asarray(row["vector_sum"], dtype=np.int64),
    )


def document_partials(mentions: Iterable[EntityMention]) -> dict[tuple[str, str], EntityStats]:
    """Per (domain, norm): the partial of one document's mentions."""
    by_key: dict[tuple[str, str], list[EntityMention]] = {}
    for m in mentions:
        by_key.setdefault((m.domain, m.norm), []).append(m)
    return {k: EntityStats.of_document(ms) for k, ms in by_key.items()}
