"""The evidence stage: fused sections become the evidence items a result returns.

An item is a section's matched passage (:func:`vdgr_core.query.passage.section_passage`)
under the section's path, with the best chunk's metadata; chunks whose text reads like
instructions to a model (flagged at index time) are named in the trace.
"""
from __future__ import annotations

from typing import Sequence

from vdgr_core import ids
from vdgr_core.query.answer import ENTRY_ANCHOR_ITEMS, asks_for_entry, is_definition
from vdgr_core.query.fusion import SectionHit
from vdgr_core.query.passage import section_passage
from vdgr_core.query.result import Evidence
from vdgr_core.query.view import IndexView


def to_evidence(view: IndexView, h: SectionHit) -> Evidence:
    """The evidence item of one section hit."""
    c = view.contents
    r = h.row
    p = section_passage(view, h.section, h.rows)
    return Evidence(chunk_id=c.ids[r], domain=c.domain[r], version=c.version[r] or "",
                    source=c.source[r], path=list(c.path[r]), title=c.title[r], text=p.text,
                    score=round(float(h.score), 8), routes=list(h.routes),
                    section_id=c.parent_id[r] or "", chunk_ids=[c.ids[x] for x in p.rows],
                    page=c.page[r], doc_id=ids.doc_id(c.source[r]))


def injection_flags(view: IndexView, hits: Sequence[SectionHit]) -> dict[str, list]:
    """Chunk id -> prompt-injection signals, for the flagged chunks of ``hits``' passages."""
    flags = view.contents.flags
    return {view.contents.ids[r]: list(flags[r])
            for h in hits for r in section_passage(view, h.section, h.rows).rows if flags[r]}


def entry_first(question: str, evidence: Sequence[Evidence], n: int = ENTRY_ANCHOR_ITEMS) -> list[Evidence]:
    """For a question asking for an option or a default (:func:`~vdgr_core.query.answer.asks_for_entry`),
    the first reference entry (:func:`~vdgr_core.query.answer.is_definition`) among the first
    ``n`` items moves first when the first item is not one; the others keep their order.

    Fusion often ranks the prose around an option (the chapter introducing forwarding, a
    module's example) above the option's own entry; the answer already quotes that entry
    (its anchor), and the evidence now shows it first too.

    Examples
    --------
    >>> def ev(title, text):
    ...     return Evidence(chunk_id=title, domain="d", version="", source="s", path=[title],
    ...                     title=title, text=text, score=1.0, routes=["hybrid"])
    >>> prose = ev("Forwarding", "Forwarding sends queries on. It helps busy sites.")
    >>> entry = ev("forward", "forward\\nGrammar: forward ( first | only );\\nAllows fallback.")
    >>> [e.title for e in entry_first("Which option disables the fallback?", [prose, entry])]
    ['forward', 'Forwarding']
    >>> [e.title for e in entry_first("What does forwarding do?", [prose, entry])]
    ['Forwarding', 'forward']
    """
    items = list(evidence)
    if not items or not asks_for_entry(question) or is_definition(items[0]):
        return items
    j = next((i for i in range(1, min(n, len(items))) if is_definition(items[i])), None)
    return items if j is None else [items[j], *items[:j], *items[j + 1:]]
