"""The evidence stage: fused sections become the evidence items a result returns.

An item is a section's matched passage (:func:`vdgr_core.query.passage.section_passage`)
under the section's path, with the best chunk's metadata; chunks whose text reads like
instructions to a model (flagged at index time) are named in the trace.
"""
from __future__ import annotations

from typing import Sequence

from vdgr_core import ids
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
