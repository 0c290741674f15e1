"""The reference the build's level-by-level directory summaries must equal: one bottom-up pass
over a whole domain's tree (transforms/directories.py never holds a domain on one worker)."""
from __future__ import annotations

from collections import defaultdict
from typing import Optional, Sequence

from schemas.records import DirectoryNode
from vdgr_core.indexing.tree_summary import DirectorySummarizer, summarize_node


def summarize_tree(nodes: Sequence[DirectoryNode], chunk_summaries: Sequence[tuple[str, int, str, tuple[str, ...]]],
                   summarizer: Optional[DirectorySummarizer] = None, *, max_chars: int = 600) -> list[DirectoryNode]:
    """Fill ``summary`` on every node of one domain, deepest first.

    Parameters
    ----------
    nodes:
        The (already merged) directory nodes of one domain.
    chunk_summaries:
        (parent_id, position, summary, acl) for each content node of the domain.
    summarizer:
        Combines (title, children, own summary); the offline default is extractive.
    """
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
        kids = [done[c] for c in children.get(n.node_id, [])]
        done[n.node_id] = summarize_node(n, own_chunks.get(n.node_id, []), kids, summarizer, max_chars=max_chars)
    return [done[n.node_id] for n in sorted(nodes, key=lambda n: n.node_id)]
