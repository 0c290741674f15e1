"""Route 2: table-of-contents search.

Coarse: the ``toc_coarse_l`` directory nodes nearest to the query vector (within scope).
Fine: the best ``toc_fine`` of them, by vector similarity plus word overlap of the question with
their title path and summary (or an LLM selection constrained to the candidate labels).
Then every visible content node under the chosen directories, ranked by similarity to the
query and bounded by ``toc_max_contents``.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from schemas.config import QueryConfig
from schemas.errors import LLMError
from vdgr_core.query.constrained import selection_model
from vdgr_core.query.data import IndexData, QueryScope, top_k
from vdgr_core.query.fusion import Ranked
from vdgr_core.query.textutil import overlap, terms
from vdgr_core.query.trace import TraceRecorder

_W_SIM, _W_LEX = 0.5, 0.5


def _label(d, i: int) -> str:
    return " > ".join(d.full_path[i][1:]) or d.title[i]


def _not_root(data: IndexData) -> np.ndarray:
    """Directories that have a parent (computed once per loaded index, not per query)."""
    cached = getattr(data, "_toc_not_root", None)
    if cached is None:
        d = data.directories
        cached = np.array([d.index.get(p or "") is not None for p in d.parent_id], dtype=bool)
        data._toc_not_root = cached
    return cached


def toc_search(data: IndexData, question: str, qvec: np.ndarray, scope: QueryScope,
               domains: Sequence[str], config: QueryConfig, trace: TraceRecorder, llm=None) -> Ranked:
    """Run route 2 and return its ranked content rows (route name ``toc``)."""
    d = data.directories
    sc = scope.with_domains(domains)
    not_root = _not_root(data)
    dsims = d.similarities(qvec)
    coarse = top_k(dsims, d.mask(sc) & not_root, config.toc_coarse_l, d.id_rank)
    if not coarse:
        trace.step("toc", "no directory candidates in scope")
        return Ranked("toc", [])
    qterms = terms(question)
    fine = sorted(((i, _W_SIM * s + _W_LEX * overlap(qterms, _label(d, i) + " " + d.summary[i]))
                   for i, s in coarse), key=lambda x: (-x[1], int(d.id_rank[x[0]])))
    chosen = [i for i, _ in fine[: config.toc_fine]]
    how = "offline"
    if llm is not None:
        picked = _llm_select(llm, question, [i for i, _ in fine], d, config.toc_fine)
        if picked is None:
            trace.step("toc", "LLM selection failed: offline fine selection used")
        else:
            chosen, how = picked, "llm"
    c = data.contents
    cmask = c.mask(sc)
    rows = sorted({r for i in chosen for r in data.descendant_contents(i) if cmask[r]})
    sims = c.similarities(qvec)
    sel = np.zeros(len(c), dtype=bool)
    sel[rows] = True
    hits = top_k(sims, sel, config.toc_max_contents, c.id_rank)
    trace.step("toc", f"{how} selection of {len(chosen)} directories from {len(coarse)} candidates, "
               f"{len(rows)} contents under them", directories=[_label(d, i) for i in chosen],
               contents=len(hits))
    return Ranked("toc", hits)


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
