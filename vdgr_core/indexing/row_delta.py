"""What an update changes, row by row, from the rows that leave and the rows that arrive.

Every function takes content rows (``contents`` table rows, with ``terms`` and ``vector``) of
the chunks whose documents leave the index (changed, deleted, moved away) and of the chunks
that arrive (added, changed, moved in), and returns only the rows or amounts that change;
``pipelines/delta_update.py`` reads the few stored rows they touch and writes the result.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Mapping, Optional, Sequence

from schemas.records import DirectoryNode
from schemas.tables import CONTAINS, COOCCURS, HAS_ENTITY
from vdgr_core.ids import edge_id, entity_id
from vdgr_core.indexing.domain_delta import mentions_from_row, pairs_from_row
from vdgr_core.indexing.entity_merge import EntityStats, document_partials, fixed_point
from vdgr_core.indexing.rows import edge_row
from vdgr_core.indexing.tree_summary import DirectorySummarizer, summarize_node


def content_edges(rows: Iterable[Mapping]) -> list[dict]:
    """The has_entity and section -> chunk edges of content rows (as the build makes them)."""
    out = []
    for r in rows:
        out.append(edge_row(CONTAINS, r["parent_id"], r["chunk_id"], r["domain"], 1.0))
        for t in r["terms"] or ():
            out.append(edge_row(HAS_ENTITY, r["chunk_id"], entity_id(r["domain"], t["norm"]), r["domain"],
                                t["mentions"]))
    return out


def entity_partials(rows: Iterable[Mapping]) -> dict[tuple[str, str], EntityStats]:
    """Per (domain, norm): the statistics the build's combine adds for these chunks (document
    partials, since a document always leaves or arrives whole, and chunk vectors)."""
    by_doc: dict[str, list[Mapping]] = defaultdict(list)
    for r in rows:
        by_doc[r["doc_id"]].append(r)
    out: dict[tuple[str, str], EntityStats] = {}
    for doc_rows in by_doc.values():
        mentions = [m for r in doc_rows for m in mentions_from_row(r)]
        for key, partial in document_partials(mentions).items():
            out.setdefault(key, EntityStats()).merge(partial)
        for r in doc_rows:
            fixed = fixed_point(r["vector"])
            for t in r["terms"] or ():
                out.setdefault((r["domain"], t["norm"]), EntityStats()).add_vector(fixed)
    return out


def pair_weights(rows: Iterable[Mapping]) -> dict[tuple[str, str, str], int]:
    """(domain, src entity id, dst entity id) -> sentences with both, summed over the rows."""
    out: dict[tuple[str, str, str], int] = defaultdict(int)
    for r in rows:
        domain = r["domain"]
        for a, b, n in pairs_from_row(r):
            src, dst = sorted((entity_id(domain, a), entity_id(domain, b)))
            out[(domain, src, dst)] += n
    return dict(out)


def pair_edge_id(key: tuple[str, str, str]) -> str:
    return edge_id(COOCCURS, key[1], key[2])


def pair_edges_after(old_weights: Mapping[tuple[str, str, str], float],
                     leaving: Mapping[tuple[str, str, str], int],
                     arriving: Mapping[tuple[str, str, str], int]) -> list[dict]:
    """The co-occurrence edges of every pair the change touches, after it (weight > 0 only)."""
    out = []
    for key in sorted(set(leaving) | set(arriving)):
        w = int(round(old_weights.get(key, 0))) - leaving.get(key, 0) + arriving.get(key, 0)
        if w > 0:
            domain, src, dst = key
            out.append(edge_row(COOCCURS, src, dst, domain, w))
    return out


def resummarize(only: Sequence[str], nodes: Mapping[str, DirectoryNode],
                children: Mapping[str, Sequence[str]],
                own_chunks: Mapping[str, Sequence[tuple[int, str, tuple[str, ...]]]],
                summarizer: Optional[DirectorySummarizer], *, max_chars: int) -> dict[str, DirectoryNode]:
    """Summaries of the ``only`` nodes again, deepest first, from their own chunks and their
    children (``nodes`` holds every node involved: the ``only`` ones and all their children,
    the latter with their current summaries)."""
    done: dict[str, DirectoryNode] = {}
    for node_id in sorted(only, key=lambda i: (-nodes[i].level, i)):
        kids = [done.get(c, nodes[c]) for c in children.get(node_id, ())]
        done[node_id] = summarize_node(nodes[node_id], own_chunks.get(node_id, ()), kids, summarizer,
                                       max_chars=max_chars)
    return done


__all__ = ["content_edges", "entity_partials", "pair_weights", "pair_edge_id", "pair_edges_after", "resummarize"]
