"""Route 2: table-of-contents search, lexical over headings and paths.

The other routes read chunk text (BM25) or compare the query vector with chunk vectors
(dense, and the graph route's seeds); the TOC route adds a different signal: how well the
question matches a section's *place in the table of contents*: the titles of the section and
of every ancestor (document, folders) plus the section's summary, scored with BM25 over those
labels (:class:`vdgr_core.query.toc_index.LabelIndex`). Coarse: the ``TocSettings.coarse_l`` best
labelled directories in scope; fine: the best ``fine`` of them (or an LLM selection
constrained to the candidate labels); then every visible section under the chosen directories,
ranked by its own label score, at most ``max_contents``. A section's passage is built
around its chunk sharing most words with the question.
"""
from __future__ import annotations

import numpy as np

from schemas.config import TocSettings
from schemas.errors import LLMError
from vdgr_core.query.constrained import selection_model
from vdgr_core.query.context import Search
from vdgr_core.query.view import IndexView, top_k
from vdgr_core.query.fusion import SectionHit, SectionList
from vdgr_core.query.textutil import overlap, terms
from vdgr_core.query.toc_index import LabelIndex


def _label(d, i: int) -> str:
    return " > ".join(d.full_path[i][1:]) or d.title[i]


def _best_row(data: IndexView, rows, qterms) -> int:
    """The row sharing most words with the question (``rows`` in reading order; first on ties)."""
    texts = data.contents.text.take(rows)
    best = max(range(len(rows)), key=lambda i: (overlap(qterms, texts[i]), -i))
    return rows[best]


def toc_search(data: IndexView, labels: LabelIndex, q: Search, config: TocSettings, llm=None) -> SectionList:
    """Run route 2 for ``q`` and return its ranked sections (route name ``toc``).

    Parameters
    ----------
    data : IndexView
    labels : LabelIndex
        The heading and path labels.
    q : Search
        Text, scope and routed domains (the trace records the selection).
    config : TocSettings
        ``coarse_l`` label matches, ``fine`` directories chosen, at most ``max_contents`` sections.
    llm : LLMClient, optional
        Chooses the fine directories among the coarse matches.
    """
    question, scope, domains, trace = q.text, q.scope, q.domains, q.trace
    d = data.directories
    sc = scope.with_domains(domains)
    scores = labels.scores(question, sc, domains)
    coarse = top_k(np.array(list(scores.values())), np.array(list(scores.keys()), dtype=np.int64),
                   config.coarse_l)
    if not coarse:
        trace.step("toc", "no heading or path matches the question in scope")
        return SectionList("toc", [])
    chosen = [i for i, _ in coarse[: config.fine]]
    how = "offline"
    if llm is not None:
        picked = _llm_select(llm, question, [i for i, _ in coarse], d, config.fine)
        if picked is None:
            trace.step("toc", "LLM selection failed: offline fine selection used")
        else:
            chosen, how = picked, "llm"
    c, sec = data.contents, data.sections
    cmask = c.mask(sc)
    qterms = terms(question)
    found: dict[int, tuple[float, int]] = {}
    for rank, i in enumerate(chosen):
        rows = np.array(data.descendant_contents(i), dtype=np.int64)
        rows = rows[cmask[rows]] if len(rows) else rows
        for s in dict.fromkeys(int(sec.of_row[r]) for r in rows):
            node = data.section_node(s)
            own = float(scores.get(node, 0.0)) if node is not None else 0.0
            key = (own, -rank)
            if s not in found or key > found[s]:
                found[s] = key
    order = sorted(found, key=lambda s: (-found[s][0], -found[s][1], int(sec.id_rank[s])))
    order = order[: config.max_contents]
    hits = []
    for s in order:
        members = sec.rows[s]
        visible = [int(r) for r in members[cmask[members]]]
        hits.append(SectionHit(s, found[s][0], (_best_row(data, visible, qterms),), ("toc",)))
    trace.step("toc", f"{how} selection of {len(chosen)} directories from {len(coarse)} heading matches, "
               f"{len(found)} sections under them", directories=[_label(d, i) for i in chosen],
               sections=len(hits))
    return SectionList("toc", hits)


def _llm_select(llm, question: str, candidates: list[int], d, n: int):
    from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

    labels = [f"D{j + 1}" for j in range(len(candidates))]
    listing = "\n".join(f"{lab}: {wrap_untrusted(_label(d, i) + ' -- ' + d.summary[i][:300], 'SECTION')}"
                        for lab, i in zip(labels, candidates))
    system = (f"Select up to {n} sections of the table of contents most likely to contain the answer. "
              "Return JSON listing their labels, best first. " + UNTRUSTED_NOTICE)
    user = f"Question:\n{wrap_untrusted(question, 'QUESTION')}\n\nSections:\n{listing}"
    model = selection_model("TocSelection", "labels", labels)
    try:
        reply = llm.structured("toc_select", [{"role": "system", "content": system},
                                              {"role": "user", "content": user}], model)
    except LLMError:
        return None
    by_label = dict(zip(labels, candidates))
    out: list[int] = []
    for lab in reply.labels:
        if by_label[lab] not in out:
            out.append(by_label[lab])
    return out[:n] or None
