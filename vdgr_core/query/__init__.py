"""The query side of VDGR: routing, three retrieval routes, backtracking, reflection, answers.

Use :class:`KnowledgeBase`::

    kb = KnowledgeBase.open("index/")
    result = kb.query("How do I enable Wireless PowerShare?", groups=["staff"])
"""
from vdgr_core.query.knowledge_base import KnowledgeBase, QueryItem
from vdgr_core.query.result import DomainScore, Evidence, QueryResult, Trace, TraceStep

__all__ = ["KnowledgeBase", "QueryItem", "QueryResult", "Evidence", "DomainScore", "Trace", "TraceStep"]
