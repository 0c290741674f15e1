"""Fusion study: every route's section lists captured once per question, fusions compared on them.

``python -m bench.quality.fusion_study [--sets s10,musique,...] [--write]``

For each set of :mod:`bench.quality.ablation` the index is opened once; each question is routed as
``KnowledgeBase.query`` routes it, and the section lists of the single routes (BM25, dense,
graph, TOC) are captured at the depth the retriever fuses (``3 k`` sections). Each fusion
method of :data:`METHODS` then turns the same lists into evidence (one item per section, at most
half of ``k`` per document) scored against the gold records, on the development and test
halves apart. So RRF, convex and z-score fusion, their weights and the route mixes are compared
on identical candidates, and a method is chosen on the development halves only.

``--write`` writes ``bench/out/fusion.json`` and the ``fusion`` block of BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import datetime
import sys
import types
from pathlib import Path
from typing import Callable, Mapping

from bench.common import REPO
from bench.prepare.datasets import DATASETS
from bench.prepare.splits import HALVES, half_of
from bench.quality.ablation import SETS, block_header, fmt_metric, open_set, write_report
from bench.report.provenance import commit, machine

CAPTURED = ("bm25", "dense", "graph", "toc")


def capture(es, work: Path, log=print) -> tuple[object, list[dict]]:
    """(knowledge base, one record per question: question, gold, routing, lists by route)."""
    from vdgr_core.query.knowledge_base import KnowledgeBase

    opened = open_set(es, work)
    questions = opened.questions
    cfg = opened.default.model_copy(update={"routes": CAPTURED, "backtrack": False, "reflection": False})
    kb = KnowledgeBase(opened.reader, opened.data, cfg, opened.embedder)
    seen: dict = {}

    def spy(self, lists):
        seen["lists"] = {lst.route: lst for lst in lists}
        return list(lists[0].hits)

    kb.retriever._fuse = types.MethodType(spy, kb.retriever)
    # the graph list captured is the graph route alone (seeded by dense hits), not the second hop
    kb.retriever._walk_on = lambda lists, q, names: [*lists, *(kb.retriever.run_route(n, q) for n in names)]
    retrieve = kb.retriever.retrieve

    def spy_retrieve(q, routes=None):
        seen.update(rq=q.text, qvec=q.qvec, scope=q.scope, domains=list(q.domains))
        return retrieve(q, routes)

    kb.retriever.retrieve = spy_retrieve
    out = []
    for q in questions:
        r = kb.query(q["question"], domain=q.get("domain"), version=q.get("version"),
                     groups=q.get("groups") or (), qid=q["id"], with_answer=False)
        out.append({"q": q, "routing": [x.model_dump() for x in r.routing], "lists": seen.pop("lists"),
                    "rq": seen.pop("rq"), "qvec": seen.pop("qvec"), "scope": seen.pop("scope"),
                    "domains": seen.pop("domains")})
    log(f"[fusion] {es.name}: {len(out)} questions captured")
    return kb, out


def evaluate(kb, records: list[dict], fuse_fn: Callable, ks) -> dict:
    """Aggregates per half of ``fuse_fn(lists by route, kb)`` over the captured records."""
    from vdgr_core.eval import aggregate, score_result
    from vdgr_core.query.fusion import cap_per_document

    k = kb.config.k
    scores = {h: [] for h in HALVES}
    for rec in records:
        hits = cap_per_document(fuse_fn(rec["lists"], kb, rec), kb.data.sections.doc, k)
        result = {"evidence": [kb._evidence(h).model_dump() for h in hits[:k]], "routing": rec["routing"]}
        scores[half_of(rec["q"]["id"])].append(score_result(result, rec["q"]["gold"], ks))
    agg = {h: aggregate(scores[h]) for h in HALVES}
    agg["all"] = aggregate(scores["dev"] + scores["test"])
    return agg


def _fuse(routes: Mapping[str, float], method: str, rrf_k: int = 60):
    from vdgr_core.query.fusion import SectionList, fuse

    def fn(lists, kb, rec):
        use = [lists[r] for r in routes if r in lists]
        if len(use) == 1:
            return list(use[0].hits)
        return fuse([SectionList(x.route, x.hits) for x in use], kb.data.sections.id_rank, method, rrf_k,
                    dict(routes))
    return fn


def _zscore_from_mean(routes: Mapping[str, float]):
    """The z-score fusion before this study: scores standardized from the list's mean, mapped
    to [0, 1] on mean +- 3 deviations, a section missing from a list counted as 0 (= mean - 3
    deviations)."""
    import numpy as np

    from vdgr_core.query.fusion import SectionHit

    def fn(lists, kb, rec):
        score, first = {}, {}
        for r, w in routes.items():
            hits = lists[r].hits
            if not hits:
                continue
            v = np.array([h.score for h in hits])
            mu, sd = v.mean(), v.std()
            norm = np.full_like(v, 0.5) if sd <= 1e-12 else np.clip((v - (mu - 3 * sd)) / (6 * sd), 0, 1)
            for h, x in zip(hits, norm):
                score[h.section] = score.get(h.section, 0.0) + w * float(x)
                first.setdefault(h.section, h)
        order = sorted(score, key=lambda s: (-score[s], int(kb.data.sections.id_rank[s])))
        return [SectionHit(s, score[s], first[s].rows, first[s].routes) for s in order]
    return fn


def _second_hop(n_seeds: int, beta: float, method: str = "zscore"):
    """Route 1 (BM25 + dense by ``method``), then the graph walk seeded by its first sections."""
    from vdgr_core.query.context import Search
    from vdgr_core.query.fusion import by_section, with_first_hop
    from vdgr_core.query.graph_route import GraphRoute
    from vdgr_core.query.trace import TraceRecorder

    route1 = _fuse({"bm25": 1.0, "dense": 1.0}, method)
    graphs: dict = {}

    def fn(lists, kb, rec):
        g = graphs.get(id(kb))
        if g is None:
            g = graphs[id(kb)] = GraphRoute(kb.data, kb.vectors, kb.config.model_copy(
                update={"graph_n": n_seeds, "graph_beta": beta}))
        head = route1(lists, kb, rec)
        n = len(lists["bm25"].hits) or 30
        q = Search(rec["rq"], rec["qvec"], rec["scope"], tuple(rec["domains"]), TraceRecorder(None), first_hop=head)
        ranked = g.search(q, 4 * n)
        return with_first_hop(by_section(ranked, kb.data.sections.of_row, n), head, n).hits
    return fn


def methods() -> dict[str, Callable]:
    """The compared methods: single routes, route-1 fusions, route 1 + graph as a third list,
    and the graph as a second hop seeded by route 1."""
    out: dict[str, Callable] = {r: _fuse({r: 1.0}, "rrf") for r in CAPTURED}
    for m in ("rrf", "convex", "zscore"):
        out[f"bm25+dense {m}"] = _fuse({"bm25": 1.0, "dense": 1.0}, m)
    out["bm25+dense zscore from the mean, clipped (before)"] = _zscore_from_mean({"bm25": 1.0, "dense": 1.0})
    for m in ("rrf", "zscore"):
        for w in (0.1, 0.5, 1.0):
            out[f"bm25+dense+graph {m} g={w}"] = _fuse({"bm25": 1.0, "dense": 1.0, "graph": w}, m)
    for n in (5, 10):
        for beta in (0.0, 0.05, 0.2, 0.8):
            out[f"route 1 then graph walk, {n} seeds, beta {beta}"] = _second_hop(n, beta)
    out["route 1 (rrf) then graph walk, 5 seeds, beta 0.05"] = _second_hop(5, 0.05, "rrf")
    return out


def run(sets, work: Path, log=print) -> dict:
    report = {"kind": "fusion", "command": "python -m bench.quality.fusion_study",
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "sets": {}}
    for name in sets:
        es = SETS[name]
        kb, records = capture(es, work, log)
        ks = DATASETS[es.dataset].ks
        res = {"note": es.note, "primary": es.primary, "methods": {},
               "questions": {h: sum(half_of(r["q"]["id"]) == h for r in records) for h in HALVES}}
        for mname, fn in methods().items():
            res["methods"][mname] = evaluate(kb, records, fn, ks)
        report["sets"][name] = res
    return report


def render(report: dict) -> str:
    lines = [*block_header("fusion", report),
             "- the same captured route lists per question (BM25, dense, graph with dense seeds, TOC; "
             "30 sections each), fused by each method; evidence = one item per section, at most half "
             "of k per document; the graph walk rows run the graph route again with route 1's sections "
             "as seeds", ""]
    for name, res in report["sets"].items():
        key = res["primary"]
        q = res["questions"]
        lines += [f"#### {name} (dev {q['dev']}, test {q['test']})", "",
                  "| method | @1 dev / test | @5 dev / test / all | @10 dev / test |", "|---|---|---|---|"]
        for mname, agg in res["methods"].items():
            c = [" / ".join(fmt_metric(key, agg[h].get(f"{key}@{n}")) for h in hs)
                 for n, hs in ((1, ("dev", "test")), (5, ("dev", "test", "all")), (10, ("dev", "test")))]
            lines.append(f"| {mname} | " + " | ".join(c) + " |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    report = run([s.strip() for s in a.sets.split(",")], a.work.resolve())
    text = render(report)
    print(text)
    if a.write:
        write_report("fusion", report, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
