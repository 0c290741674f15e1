"""Bottom-up directory summaries over one domain's tree, and the directory merge.

A directory's summary is made from its own chunks' summaries and then its children's
summaries, deepest level first. Access rule: a child contributes to its parent's summary only
if everyone who may see the parent may also see the child, so a summary never leaks text
from a document its reader cannot open.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from collections import defaultdict
from typing import Callable, Collection, Iterable, Optional, Sequence

from schemas.records import DirectoryNode
from vdgr_core.summarize import directory_summary, extractive_summary

# (title, [(child title, child summary)], own summary) -> summary
DirectorySummarizer = Callable[[str, Sequence[tuple[str, str]], str], str]


def merge_directory_nodes(nodes: Iterable[DirectoryNode]) -> DirectoryNode:
    """Dedup-merge of nodes with one id (same full path and version): keep a canonical one.

    Nodes with one id agree on path and version; if two sources disagree on acl (a folder and
    a document title colliding), the union of groups is kept, the stricter choice. ``sources``
    lists every document that produced the node (folders come from the scan, not a document),
    so an update knows which documents to re-merge when one of them changes.
    """
    nodes = sorted(nodes, key=lambda n: (n.kind != "folder", n.source, n.parent_id))
    first = nodes[0]
    acl = sorted({g for n in nodes for g in n.acl})
    sources = sorted({n.source for n in nodes if n.source} | {s for n in nodes for s in n.sources})
    return dataclasses.replace(first, acl=tuple(acl), sources=tuple(sources))


def may_contribute(parent_acl: Sequence[str], child_acl: Sequence[str]) -> bool:
    """True when every reader of the parent can also read the child."""
    if not child_acl:
        return True
    return bool(parent_acl) and set(parent_acl) <= set(child_acl)


def summarize_node(node: DirectoryNode, own_chunks: Sequence[tuple[int, str, tuple[str, ...]]],
                   children: Sequence[DirectoryNode], summarizer: Optional[DirectorySummarizer] = None,
                   *, max_chars: int = 600) -> DirectoryNode:
    """``node`` with its summary, from its own chunks' (position, summary, acl) and its children
    (already summarized): one step of the bottom-up pass: the build's level-by-level summaries
    (transforms/directories.py) and the update's (vdgr_core/indexing/row_delta.py)."""
    summarizer = summarizer or (lambda title, children, own: directory_summary(
        title, children, own, max_chars=max_chars))
    parts = [s for _, s, acl in sorted(own_chunks) if s and may_contribute(node.acl, acl)]
    own = extractive_summary(" ".join(parts), node.title, 3, max_chars) if parts else ""
    kids = sorted(children, key=lambda c: (c.title, c.node_id))
    kid_pairs = [(c.title, c.summary) for c in kids if may_contribute(node.acl, c.acl)]
    summary = summarizer(node.title, kid_pairs, own) if (kid_pairs or own) else node.title
    return dataclasses.replace(node, summary=summary)


def llm_directory_summarizer(client, *, max_chars: int = 600,
                             on_fallback: Optional[Callable[[str, str], None]] = None) -> DirectorySummarizer:
    """A summarizer that asks the LLM, given the children's summaries.

    When the LLM fails for a directory (:class:`~schemas.errors.LLMError`), that directory gets
    the offline extractive summary instead and ``on_fallback(title, reason)`` is called, so the
    build can count it; without ``on_fallback`` the error propagates.
    """
    from schemas.errors import LLMError
    from vdgr_core.llm.indexing_tasks import summarize_directory

    def run(title: str, children: Sequence[tuple[str, str]], own: str) -> str:
        items = list(children)
        if own:
            items = [("(text of this section)", own)] + items
        try:
            return summarize_directory(client, title, items)
        except LLMError as exc:
            if on_fallback is None:
                raise
            on_fallback(title, str(exc) or type(exc).__name__)
            return directory_summary(title, children, own, max_chars=max_chars)

    return run


# ----------------------------------------------------------------------------------------------
# The same bottom-up pass, split for a pipeline: documents first, then folders level by level.
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Child:
    """What a parent's summary needs of a summarized child."""

    node_id: str
    title: str
    summary: str
    acl: tuple[str, ...]


# Records sent to the folder levels, keyed by the id of the node they are for:
#   ("node", DirectoryNode)         the node itself (to merge with others of its id)
#   ("chunk", (position, summary, acl))  one of its own chunks
#   ("child", Child)                one of its summarized children
LevelRecord = tuple[str, object]


def _child(n: DirectoryNode) -> Child:
    return Child(n.node_id, n.title, n.summary, tuple(n.acl))


def summarize_document_group(
    trees: Sequence, folder_ids: Collection[str], summarizer: Optional[DirectorySummarizer] = None,
    *, max_chars: int = 600,
) -> tuple[list[DirectoryNode], list[tuple[int, str, LevelRecord]]]:
    """Summarize the nodes of the documents sharing one document node id (usually one document).

    ``trees``: their DocumentTree (nodes and chunk summaries). Nodes with one id are merged.
    A node whose id is also a folder's (a document titled like a folder beside it) is merged
    with that folder at its level, with every ancestor of it in the group: those nodes are
    returned as records for the folder levels instead of being summarized here.

    Returns
    -------
    (summarized nodes, [(level, node id, record)])
        The records go to the folder levels: the summaries of the group's top nodes (as
        children of their parents), and the deferred nodes with their own chunks.
    """
    by_id: dict[str, list[DirectoryNode]] = defaultdict(list)
    own: dict[str, list[tuple[int, str, tuple[str, ...]]]] = defaultdict(list)
    for tree in trees:
        for n in tree.nodes:
            by_id[n.node_id].append(n)
        for parent_id, position, summary, acl in tree.chunks:
            own[parent_id].append((position, summary, tuple(acl)))
    nodes = {i: merge_directory_nodes(ns) for i, ns in by_id.items()}
    deferred = set()
    for node_id in [i for i in nodes if i in folder_ids]:
        while node_id in nodes and node_id not in deferred:
            deferred.add(node_id)
            node_id = nodes[node_id].parent_id
    children: dict[str, list[str]] = defaultdict(list)
    for n in nodes.values():
        if n.parent_id in nodes:
            children[n.parent_id].append(n.node_id)
    done: dict[str, DirectoryNode] = {}
    records: list[tuple[int, str, LevelRecord]] = []
    for n in sorted(nodes.values(), key=lambda n: (-n.level, n.node_id)):
        if n.node_id in deferred:
            records.append((n.level, n.node_id, ("node", n)))
            records += [(n.level, n.node_id, ("chunk", c)) for c in own.get(n.node_id, [])]
            continue
        kids = [done[c] for c in children.get(n.node_id, []) if c in done]
        done[n.node_id] = summarize_node(n, own.get(n.node_id, []), kids, summarizer, max_chars=max_chars)
        if n.parent_id and (n.parent_id not in nodes or n.parent_id in deferred):
            records.append((n.level - 1, n.parent_id, ("child", _child(done[n.node_id]))))
    return sorted(done.values(), key=lambda n: n.node_id), records


def summarize_level_node(node_id: str, records: Iterable[LevelRecord],
                         summarizer: Optional[DirectorySummarizer] = None, *,
                         max_chars: int = 600) -> Optional[DirectoryNode]:
    """Summarize one node of a folder level from its records (nodes of its id, own chunks,
    summarized children); None when no record is the node itself."""
    nodes, chunks, kids = [], [], []
    for kind, value in records:
        (nodes if kind == "node" else chunks if kind == "chunk" else kids).append(value)
    if not nodes:
        return None
    node = merge_directory_nodes(nodes)
    return summarize_node(node, chunks, kids, summarizer, max_chars=max_chars)


def merge_two(a: DirectoryNode, b: DirectoryNode) -> DirectoryNode:
    """Pairwise form of :func:`merge_directory_nodes` (associative: a combine function)."""
    return merge_directory_nodes([a, b])
