"""Directory backtracking: widen weak evidence with its neighbours in the table of contents.

From the best evidence's directory node: first its sibling contents and sibling directories,
then the parent's siblings with top-down descent into them, up to ``ExpandSettings.backtrack_depth`` levels.
Offline, backtracking runs when the evidence covers the question's words weakly, and a level's
candidates are kept when they mention missing words (or are the most similar ones); an LLM may
make both decisions instead. Candidates are always inside the scope (ACL pre-filter).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from schemas.errors import LLMError
from schemas import tables as T
from vdgr_core.query.constrained import selection_model
from vdgr_core.query.context import Search
from vdgr_core.query.fusion import SectionHit
from vdgr_core.query.reflection import evidence_text, judge_offline, row_text
from vdgr_core.query.textutil import overlap
from vdgr_core.query.view import IndexView

PER_LEVEL = 3
MAX_CANDIDATES = 20
SIMILARITY_POOL = 60    # candidates per level whose cosine with the question is read
MAX_READ = 400          # contents read per level (document order) before ranking them


def _level_candidates(data: IndexView, node: int, depth: int, child: int | None) -> list[int]:
    """Content rows reached at ``depth``: under ``node`` (depth 1) or under its other children
    (at most :data:`MAX_READ`, in document order)."""
    d = data.directories
    rows = list(d.contents(node)) if depth == 1 else []
    for sib in d.children(node):
        if len(rows) >= MAX_READ:
            break
        if sib != child:
            rows.extend(data.descendant_contents(sib, max_nodes=MAX_READ))
    return rows[:MAX_READ]


def backtrack(data: IndexView, vectors, q: Search, evidence: Sequence[SectionHit], *, depth: int,
              llm=None) -> list[SectionHit]:
    """Return sections to add (route ``backtrack``), best first; each with its chosen chunk.

    Parameters
    ----------
    data : IndexView
    vectors : VectorSearch
        The candidates' cosine with ``q.qvec``.
    q : Search
        The question (``q.text``), its vector, the scope the candidates must be in (ACL
        pre-filter) and the trace.
    evidence : sequence of SectionHit
        The fused evidence, best first; backtracking starts from the best one's directory.
    depth : int
        The levels climbed (``ExpandSettings.backtrack_depth``).
    llm : LLMClient, optional
        Decides whether to backtrack and which candidates to keep (offline rules without it).
    """
    question, trace = q.text, q.trace
    max_depth = depth
    sec = data.sections
    if not evidence or max_depth == 0:
        return []
    j = judge_offline(question, evidence, data)
    if j.sufficient:
        trace.step("backtrack", "evidence covers the question: no backtracking", coverage=j.coverage)
        return []
    node = data.contents.dir_of(evidence[0].row)
    if node is None:
        return []
    added: list[int] = []
    missing = list(j.missing)
    sims: dict[int, float] = {}
    for depth, node, candidates in _levels(data, q, evidence, node, max_depth):
        rows = _ranked(data, vectors, q, [r for r in candidates if r not in added], missing, sims)
        if rows:
            if llm is not None:
                picked = _llm_pick(llm, question, evidence, rows, data)
                if picked is None:
                    trace.step("backtrack", "LLM judge failed: offline choice used", depth=depth)
                    picked = _offline_pick(rows, missing, data)
                elif not picked:
                    trace.step("backtrack", "LLM judged no backtracking needed", depth=depth)
                    break
            else:
                picked = _offline_pick(rows, missing, data)
            added.extend(picked)
            trace.step("backtrack", f"depth {depth}: {len(rows)} candidates, {len(picked)} added",
                       depth=depth, node=" > ".join(data.directories.full_path[node]))
            more = [SectionHit(int(sec.of_row[r]), 0.0, (r,), ()) for r in added]
            missing = list(judge_offline(question, [*evidence, *more], data).missing)
            if not missing:
                break
    trace.step("backtrack", f"evidence weak (coverage {j.coverage}): {len(added)} contents added",
               coverage=j.coverage, added=len(added))
    out: dict[int, SectionHit] = {}
    for r in added:
        s = int(sec.of_row[r])
        out.setdefault(s, SectionHit(s, 0.0, (r,), ("backtrack",)))
    return list(out.values())


def _levels(data: IndexView, q: Search, evidence: Sequence[SectionHit], node: int,
            max_depth: int) -> list[tuple[int, int, list[int]]]:
    """(depth, directory node, candidate content rows) of each level climbed from ``node``:
    rows in the scope whose section is not in ``evidence`` yet."""
    cmask = data.contents.mask(q.scope)
    sec = data.sections
    have = {f.section for f in evidence}
    levels: list[tuple[int, int, list[int]]] = []
    child = None
    for depth in range(1, max_depth + 1):
        level = np.array(list(dict.fromkeys(_level_candidates(data, node, depth, child))), dtype=np.int64)
        level = level[cmask[level]] if len(level) else level
        levels.append((depth, node, [int(r) for r in level if int(sec.of_row[r]) not in have]))
        parent = data.parent_dir(node)
        if parent is None:
            break
        child, node = node, parent
    return levels


def _ranked(data: IndexView, vectors, q: Search, candidates: list[int], missing: list[str],
            sims: dict[int, float]) -> list[int]:
    """The best :data:`MAX_CANDIDATES` of ``candidates``: by the share of ``missing`` words they
    hold; the best few by their cosine with the question too (vectors are read for those only,
    and remembered in ``sims``)."""
    rows = sorted(candidates, key=lambda r: (-(overlap(missing, row_text(data, r)) if missing else 0.0), r))
    rows = rows[:SIMILARITY_POOL]
    need = [r for r in rows if r not in sims]
    if need:
        sims.update(zip(need, (float(x) for x in vectors.similarity(T.CONTENTS, q.qvec, need))))
    rows.sort(key=lambda r: (-(overlap(missing, row_text(data, r)) if missing else 0.0), -sims[r], r))
    return rows[:MAX_CANDIDATES]


def _offline_pick(rows: list[int], missing: list[str], data: IndexView) -> list[int]:
    hit = [r for r in rows if missing and overlap(missing, row_text(data, r)) > 0]
    return (hit or rows[:1])[:PER_LEVEL]


def _llm_pick(llm, question, evidence, rows, data):
    from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

    labels = [f"S{i + 1}" for i in range(len(rows))]
    best = wrap_untrusted(evidence_text(data, evidence[0])[:1200], "EVIDENCE")
    listing = "\n".join(f"{lab}: {wrap_untrusted(row_text(data, r)[:600], 'CANDIDATE')}"
                        for lab, r in zip(labels, rows))
    model = selection_model("BacktrackChoice", "labels", labels, extra={"backtrack": (bool, ...)})
    system = ("Decide whether neighbouring sections are needed to answer the question beyond the "
              f"current evidence; if so list up to {PER_LEVEL} candidate labels. Reply in JSON. "
              + UNTRUSTED_NOTICE)
    user = (f"Question:\n{wrap_untrusted(question, 'QUESTION')}\n\nCurrent best evidence:\n{best}"
            f"\n\nCandidates:\n{listing}")
    try:
        r = llm.structured("backtrack", [{"role": "system", "content": system},
                                         {"role": "user", "content": user}], model)
    except LLMError:
        return None
    if not r.backtrack:
        return []
    by = dict(zip(labels, rows))
    return list(dict.fromkeys(by[lab] for lab in r.labels))[:PER_LEVEL]
