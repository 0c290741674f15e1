"""Bottom-up directory summaries over one domain's tree, and the directory merge.

A directory's summary is made from its own chunks' summaries and then its children's
summaries, deepest level first. Access rule: a child contributes to its parent's summary only
if everyone who may see the parent may also see the child, so a summary never leaks text
from a document its reader cannot open.
"""
from __future__ import annotations

import dataclasses
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


def summarize_tree(
    nodes: Sequence[DirectoryNode],
    chunk_summaries: Sequence[tuple[str, int, str, tuple[str, ...]]],
    summarizer: Optional[DirectorySummarizer] = None,
    *,
    max_chars: int = 600,
    only: Optional[Collection[str]] = None,
) -> list[DirectoryNode]:
    """Fill ``summary`` on every node of one domain, deepest first.

    Parameters
    ----------
    nodes:
        The (already merged) directory nodes of one domain.
    chunk_summaries:
        (parent_id, position, summary, acl) for each content node of the domain.
    summarizer:
        Combines (title, children, own summary); the offline default is extractive.
    only:
        When given (an update), only these node ids are summarized again; every other node
        keeps the summary it carries, which its parent then reads. The caller passes every
        node whose own fields, chunks or children changed, and all their ancestors.
    """
    summarizer = summarizer or (lambda title, children, own: directory_summary(
        title, children, own, max_chars=max_chars))
    by_id = {n.node_id: n for n in nodes}
    children: dict[str, list[str]] = defaultdict(list)
    for n in nodes:
        if n.parent_id in by_id:
            children[n.parent_id].append(n.node_id)
    own_chunks: dict[str, list[tuple[int, str, tuple[str, ...]]]] = defaultdict(list)
    for parent_id, position, summary, acl in chunk_summaries:
        own_chunks[parent_id].append((position, summary, tuple(acl)))

    done: dict[str, DirectoryNode] = {}
    for n in sorted(nodes, key=lambda n: (-n.level, n.node_id)):
        if only is not None and n.node_id not in only:
            done[n.node_id] = n
            continue
        parts = [s for _, s, acl in sorted(own_chunks.get(n.node_id, [])) if s and may_contribute(n.acl, acl)]
        own = extractive_summary(" ".join(parts), n.title, 3, max_chars) if parts else ""
        kids = sorted((done[c] for c in children.get(n.node_id, [])), key=lambda c: (c.title, c.node_id))
        kid_pairs = [(c.title, c.summary) for c in kids if may_contribute(n.acl, c.acl)]
        summary = summarizer(n.title, kid_pairs, own) if (kid_pairs or own) else n.title
        done[n.node_id] = dataclasses.replace(n, summary=summary, text_summary=own)
    return [done[n.node_id] for n in sorted(nodes, key=lambda n: n.node_id)]


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
