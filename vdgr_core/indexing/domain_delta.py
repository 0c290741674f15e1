"""Document-level delta: the graph rows of changed domains, from stored rows plus changed documents.

An update must give exactly the index a full build of the new corpus gives. Each function here
recomputes one kind of row the way the build's transforms do, but starts from what the index
already stores instead of re-parsing unchanged documents:

* entities and existence edges: from the ``terms`` column of the domain's content rows (the
  mentions the build's entity merge added up);
* co-occurrence edges: the stored weights, minus the sentences of the chunks that left, plus
  those of the chunks that arrived (pairs re-derived from text and terms, no term extraction);
* directory nodes: only the nodes a changed document produced (the ``sources`` column), whose
  folder changed, or that a new document produces are merged again;
* summaries: only those nodes, the sections whose chunks changed, and their ancestors;
* containment edges: from the nodes' and chunks' parent ids.

tests/pipelines/test_update_property.py checks the whole against full rebuilds.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields
from typing import Callable, Iterable, Mapping, Sequence

from schemas.records import Chunk, DirectoryNode, Term
from schemas.tables import CONTAINS, COOCCURS, HAS_ENTITY
from vdgr_core.ids import entity_id
from vdgr_core.indexing.annotate import EntityMention, annotation_from_terms
from vdgr_core.indexing.entity_merge import EntityAccumulator, entity_row
from vdgr_core.indexing.rows import edge_row
from vdgr_core.indexing.tree_summary import merge_directory_nodes

_NODE_FIELDS = tuple(f.name for f in fields(DirectoryNode) if f.name != "text_summary")


def chunk_from_row(row: Mapping) -> Chunk:
    """The Chunk (with summary and entities) a contents row was made from."""
    return Chunk(
        chunk_id=row["chunk_id"], doc_id=row["doc_id"], text=row["text"], source=row["source"],
        title=row["title"], path=tuple(row["path"]), parent_id=row["parent_id"], domain=row["domain"],
        collection=row["collection"], version=row["version"], acl=tuple(row["acl"] or ()),
        position=row["position"], n_tokens=row["n_tokens"], summary=row["summary"],
        entities=tuple(row["entities"] or ()), page=row.get("page"),
    )


def mentions_from_row(row: Mapping) -> tuple[EntityMention, ...]:
    """The entity mentions of a stored chunk (its ``terms`` column)."""
    return tuple(EntityMention(row["domain"], t["norm"], t["name"], t["kind"], t["score"], t["mentions"],
                               row["chunk_id"], row["doc_id"]) for t in row["terms"] or ())


def pairs_from_row(row: Mapping) -> tuple[tuple[str, str, int], ...]:
    """Co-occurring entity pairs (norm_a, norm_b, sentences) of a stored chunk."""
    terms = [Term(name=t["name"], norm=t["norm"], kind=t["kind"], score=t["score"])
             for t in row["terms"] or ()]
    return annotation_from_terms(chunk_from_row(row), terms).pairs


def entities_and_existence(content_rows: Iterable[Mapping]) -> tuple[list[dict], list[dict]]:
    """Entity rows (without vectors) and has_entity edges of every domain in ``content_rows``.

    ``content_rows`` must hold every chunk of those domains (the entity statistics are per domain).
    """
    accs: dict[tuple[str, str], EntityAccumulator] = {}
    n_chunks: dict[str, int] = defaultdict(int)
    edges = []
    for row in content_rows:
        domain, chunk_id, doc_id = row["domain"], row["chunk_id"], row["doc_id"]
        n_chunks[domain] += 1
        for t in row["terms"] or ():
            key = (domain, t["norm"])
            acc = accs.get(key)
            if acc is None:
                acc = accs[key] = EntityAccumulator()
            acc.add_values(t["name"], t["kind"], t["score"], t["mentions"], chunk_id, doc_id)
            edges.append(edge_row(HAS_ENTITY, chunk_id, entity_id(domain, t["norm"]), domain, t["mentions"]))
    entities = [entity_row(domain, norm, acc, n_chunks[domain] or 1)
                for (domain, norm), acc in sorted(accs.items())]
    return entities, edges


def cooccurrence_after(old_edges: Iterable[Mapping], removed_rows: Iterable[Mapping],
                       added_rows: Iterable[Mapping]) -> list[dict]:
    """Co-occurrence edges after chunks left and arrived (weights are sentence counts)."""
    weights: dict[tuple[str, str, str], int] = defaultdict(int)
    for e in old_edges:
        weights[(e["domain"], e["src"], e["dst"])] += int(round(e["weight"]))
    for rows, sign in ((removed_rows, -1), (added_rows, 1)):
        for row in rows:
            domain = row["domain"]
            for a, b, n in pairs_from_row(row):
                src, dst = sorted((entity_id(domain, a), entity_id(domain, b)))
                weights[(domain, src, dst)] += sign * n
    return [edge_row(COOCCURS, src, dst, domain, w)
            for (domain, src, dst), w in sorted(weights.items()) if w > 0]


def node_from_row(row: Mapping) -> DirectoryNode:
    """The DirectoryNode (with its summary) a directories row was made from."""
    return DirectoryNode(
        node_id=row["node_id"], full_path=tuple(row["full_path"]), parent_id=row["parent_id"],
        domain=row["domain"], collection=row["collection"], version=row["version"], title=row["title"],
        level=row["level"], kind=row["kind"], acl=tuple(row["acl"] or ()), source=row["source"],
        sources=tuple(row["sources"] or ()), summary=row["summary"],
    )


def _same_node(a: DirectoryNode, b: DirectoryNode) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in _NODE_FIELDS if f != "summary")


@dataclass(frozen=True)
class NodeMerge:
    """The directory nodes of the changed domains after an update."""

    nodes: tuple[DirectoryNode, ...]   # untouched nodes keep their stored summary
    touched: frozenset[str]            # ids merged again (present or removed)
    removed: frozenset[str]            # ids that no longer exist
    old_parents: frozenset[str]        # parents of touched nodes before the update


def merge_nodes_after(
    old_nodes: Sequence[DirectoryNode],
    removed_sources: Iterable[str],
    new_document_nodes: Sequence[DirectoryNode],
    folder_nodes: Sequence[DirectoryNode],
    parse_sources: Callable[[Sequence[str]], Mapping[str, Sequence[DirectoryNode]]],
) -> NodeMerge:
    """Merge again the directory nodes a change touches.

    Parameters
    ----------
    old_nodes:
        The stored nodes of the changed domains (with ``sources``).
    removed_sources:
        Documents whose old rows leave (changed, deleted or moved away).
    new_document_nodes:
        The unmerged nodes the arriving documents produce.
    folder_nodes:
        ``folder_nodes(task)`` of every current document of the changed domains.
    parse_sources:
        Returns the unmerged nodes of unchanged documents that share a touched node (rare:
        two documents with one title in one folder); called once, with all of them.
    """
    removed = set(removed_sources)
    old = {n.node_id: n for n in old_nodes}
    folders: dict[str, list[DirectoryNode]] = defaultdict(list)
    for n in folder_nodes:
        folders[n.node_id].append(n)
    arriving: dict[str, list[DirectoryNode]] = defaultdict(list)
    for n in new_document_nodes:
        arriving[n.node_id].append(n)

    touched = {i for i, n in old.items() if removed & set(n.sources)} | set(arriving)
    for i in set(folders) | {i for i, n in old.items() if n.kind in ("folder", "domain")}:
        before = old.get(i)
        if before is None or i not in folders or before.sources:
            touched.add(i)
        elif not _same_node(merge_directory_nodes(folders[i]), before):
            touched.add(i)

    co_sources = sorted({s for i in touched if i in old for s in old[i].sources} - removed)
    co_nodes: dict[str, list[DirectoryNode]] = defaultdict(list)
    if co_sources:
        for nodes in parse_sources(co_sources).values():
            for n in nodes:
                co_nodes[n.node_id].append(n)

    merged: dict[str, DirectoryNode] = {i: n for i, n in old.items() if i not in touched}
    gone = set()
    for i in touched:
        parts = folders.get(i, []) + arriving.get(i, []) + co_nodes.get(i, [])
        if parts:
            merged[i] = merge_directory_nodes(parts)
        else:
            gone.add(i)
    old_parents = {old[i].parent_id for i in touched if i in old and old[i].parent_id}
    return NodeMerge(tuple(merged[i] for i in sorted(merged)), frozenset(touched), frozenset(gone),
                     frozenset(old_parents))


def nodes_to_summarize(nodes: Sequence[DirectoryNode], seeds: Iterable[str]) -> set[str]:
    """``seeds`` that still exist and all their ancestors: the summaries to make again."""
    by_id = {n.node_id: n for n in nodes}
    out: set[str] = set()
    stack = [s for s in seeds if s in by_id]
    while stack:
        i = stack.pop()
        if i in out:
            continue
        out.add(i)
        parent = by_id[i].parent_id
        if parent in by_id:
            stack.append(parent)
    return out


def containment_edges(nodes: Iterable[DirectoryNode], content_rows: Iterable[Mapping]) -> list[dict]:
    """directory -> directory and directory -> content edges (as ``ContainmentEdges`` makes them)."""
    out = [edge_row(CONTAINS, n.parent_id, n.node_id, n.domain, 1.0) for n in nodes if n.parent_id]
    out += [edge_row(CONTAINS, r["parent_id"], r["chunk_id"], r["domain"], 1.0) for r in content_rows]
    return out


def chunk_summaries(content_rows: Iterable[Mapping]) -> list[tuple[str, int, str, tuple[str, ...]]]:
    """(parent_id, position, summary, acl) per chunk: what ``summarize_tree`` reads."""
    return [(r["parent_id"], r["position"], r["summary"], tuple(r["acl"] or ())) for r in content_rows]


__all__ = ["chunk_from_row", "mentions_from_row", "pairs_from_row", "entities_and_existence",
           "cooccurrence_after", "node_from_row", "NodeMerge", "merge_nodes_after",
           "nodes_to_summarize", "containment_edges", "chunk_summaries"]
