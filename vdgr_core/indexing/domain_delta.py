"""Stored rows back into records, and the re-merge of the directory nodes a change touches.

An update must give exactly the index a full build of the new corpus gives. It starts from what
the index stores instead of re-parsing unchanged documents:

* a content row gives back its Chunk, its entity mentions (the ``terms`` column) and its
  co-occurring pairs (re-derived from text and terms, no term extraction);
* directory nodes: only the nodes a changed document produced (the ``sources`` column), whose
  folder changed, or that a new document produces are merged again (:func:`merge_nodes_after`).

vdgr_core/indexing/row_delta.py turns these into the rows that change;
tests/pipelines/test_update_property.py checks the whole against full rebuilds.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields
from typing import Callable, Iterable, Mapping, Sequence

from schemas.records import Chunk, DirectoryNode, Term
from vdgr_core.indexing.annotate import EntityMention, annotation_from_terms
from vdgr_core.indexing.tree_summary import merge_directory_nodes

_NODE_FIELDS = tuple(f.name for f in fields(DirectoryNode))


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


__all__ = ["chunk_from_row", "mentions_from_row", "pairs_from_row", "node_from_row", "NodeMerge",
           "merge_nodes_after"]
