"""Ablation of the query method on every benchmark set, development and test halves apart.

``python -m bench.quality.ablation [--sets s10,s10_long,musique,dcd,dcd_natural,emanual_named]
[--configs bm25,full,...] [--embedding-precision fp32|bf16|int8] [--check] [--write]``

For each set: convert the shared data (:mod:`bench.prepare.datasets`), build the index with the real
``vdgr index`` when its corpus or arguments changed (:func:`bench.vdgr_cli.ensure_index`),
open it once in this process and answer every question with :meth:`KnowledgeBase.query`
under each configuration (one question at a time, so the latency includes embedding the
question). Each question falls in the development or the test half by a hash of its id
(:mod:`bench.prepare.splits`); every figure is reported for both halves and for all questions.

Configurations: the single routes (``bm25``, ``dense``, ``hybrid`` = route 1, ``toc``,
``graph``; routing stays on, it is a scope decision, not a route), ``full`` (the default
``QueryConfig``), ``full - X`` for every component X of the default, ``full + X`` for every
component off by default (TOC, backtracking, the bridge-entity query, section re-scoring) and
``full`` with each other fusion method for route 1 and across routes (RRF vs convex vs z-score),
and ``graph`` and ``full`` on the set's index built again without each build-time component of
the default (:data:`BUILD_VARIANTS`: title entities).

``--check`` fails (exit 1) when on any set the full configuration's primary metric at 5
(R@5; passage recall@5 on MuSiQue; value@5 on DCD) is more than one point below the best
single route's, over all questions of the set. ``--write`` merges the tables into
BENCHMARKS.md (block ``ablation``) and writes ``bench/out/ablation.json``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from bench.common import REPO, read_jsonl
from bench.prepare.datasets import DATASETS
from bench.prepare.splits import HALVES, half_of
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine
from bench.vdgr_cli import ensure_index

SLACK = 0.01          # the full configuration may trail the best single route by one point
SINGLE_ROUTES = ("bm25", "dense", "hybrid", "toc", "graph")


@dataclass(frozen=True)
class EvalSet:
    """One question set over one index.

    ``dataset`` names the converter in :data:`bench.prepare.datasets.DATASETS`; ``work`` is the work
    folder (the dataset's name unless the index is built with other ``index_args``).
    """

    name: str
    dataset: str
    setting: str
    primary: str                      # metric prefix; the check reads ``<primary>@5``
    work: str
    index_args: tuple[str, ...] = ()
    note: str = ""


SETS: dict[str, EvalSet] = {s.name: s for s in (
    EvalSet("s10", "emanual", "s10", "hit", "emanual", note="EManual S10 manual, 50 expert questions"),
    EvalSet("s10_long", "emanual", "s10", "hit", "emanual_long", ("--chunk-tokens", "48", "--overlap-tokens", "3"),
            note="the same manual chunked at 48 tokens: sections of several chunks each"),
    EvalSet("emanual_named", "emanual_all", "named", "hit", "emanual_all",
            note="S10 questions naming the product, over all 33 manuals (routing)"),
    EvalSet("musique", "musique", "musique", "src_recall", "musique", note="MuSiQue, 100 multi-hop questions"),
    EvalSet("dcd", "dcd", "dcd", "value_hit", "dcd", note='DCD, "RC <complex>, section <collection>: ..."'),
    EvalSet("dcd_natural", "dcd", "natural", "value_hit", "dcd",
            note="DCD, the same facts asked naturally, no collection named"),
)}


def with_precision(es: EvalSet, precision: str) -> EvalSet:
    """``es`` with its index built at ``precision`` (``fp32``, ``bf16`` or ``int8``) in its own work folder.

    Parameters
    ----------
    es : EvalSet
        The set.
    precision : str
        The ``vdgr index --embedding-precision`` value.

    Returns
    -------
    EvalSet
        A copy whose ``index_args`` add the precision and whose ``work`` is ``<work>_<precision>``.
    """
    return replace(es, work=f"{es.work}_{precision}",
                   index_args=(*es.index_args, "--embedding-precision", precision))


def configs(full_routes: tuple[str, ...]) -> list[tuple[str, dict]]:
    """(name, QueryConfig overrides): single routes, the default, and leave-one-out rows."""
    off = {"backtrack": False, "reflection": False}
    out: list[tuple[str, dict]] = [(r, {"routes": (r,), **off}) for r in SINGLE_ROUTES]
    out.append(("full", {}))
    for r in full_routes:
        if r != "hybrid" and len(full_routes) > 1:
            out.append((f"full - {r}", {"routes": tuple(x for x in full_routes if x != r)}))
    from schemas.config import QueryConfig, RerankerConfig

    default = QueryConfig()
    for r in ("toc", "graph"):                 # secondary routes off by default: what they would add
        if r not in full_routes:
            out.append((f"full + {r}", {"routes": (*full_routes, r)}))
    out.append(("full - backtrack", {"backtrack": False}) if default.backtrack
               else ("full + backtrack", {"backtrack": True}))
    out.append(("full - reflection", {"reflection": False}) if default.reflection
               else ("full + reflection", {"reflection": True}))
    if not default.reflection_bridge:
        out.append(("full + bridge reflection", {"reflection_bridge": True}))
    if default.reranker.kind == "none":
        out.append(("full + section rerank", {"reranker": RerankerConfig(kind="section")}))
    out.append(("full - routing", {"routing": False}))
    out.append(("full - named units first", {"named_first": False}) if default.named_first
               else ("full + named units first", {"named_first": True}))
    out.append(("full - copies last", {"copies_last": False}) if default.copies_last
               else ("full + copies last", {"copies_last": True}))
    out.append(("full - recall tail", {"recall_tail": False}) if default.recall_tail
               else ("full + recall tail", {"recall_tail": True}))
    out.append(("full - entry first", {"entry_first": False}) if default.entry_first
               else ("full + entry first", {"entry_first": True}))
    if default.graph_keep_head:
        out.append(("full, walk reorders the head", {"graph_keep_head": False}))
    out.append(("full, walk reorders the seeds", {"graph_keep_seeds": False}) if default.graph_keep_seeds
               else ("full + keep unreached seeds", {"graph_keep_seeds": True}))
    for method in ("rrf", "convex", "zscore"):     # the fusion alternatives (RRF vs score-based)
        if method != default.hybrid_fusion:
            out.append((f"full, {method} route-1 fusion", {"hybrid_fusion": method}))
        if method != default.route_fusion:
            out.append((f"full, {method} route fusion", {"route_fusion": method}))
    return out


# Build-time components: each set's index built again with one setting off, answered under
# these configurations (row "<configuration>, <label>")
BUILD_VARIANTS = (("index without title entities", ("--no-title-entities",), ("graph", "full")),)


def open_set_index(index: Path) -> tuple:
    """Open a built index for querying in this process.

    Parameters
    ----------
    index : Path
        The index folder (its ``manifest.json`` names the embedding model and dimension).

    Returns
    -------
    tuple
        ``(reader, view, embedder, config)``: an :class:`IndexReader`, an :class:`IndexView`
        over it, the embedder the index was built with (same model, precision and call scheme)
        and the default :class:`QueryConfig` for that embedder.
    """
    from schemas.config import EmbeddingConfig, QueryConfig
    from vdgr_core.embedding import make_embedder
    from vdgr_core.query.view import IndexView
    from vdgr_core.store.manifest import read_manifest
    from vdgr_core.store.reader import IndexReader

    m = read_manifest(str(index))
    emb = EmbeddingConfig.for_index(m.embedding_model, m.dim)
    reader = IndexReader(str(index))
    return reader, IndexView(reader), make_embedder(emb), QueryConfig(embedding=emb)


@dataclass(frozen=True)
class OpenedSet:
    """One set ready to answer: its converter, questions, index (reader, view, embedder) and
    the default configuration for that index; ``index`` is :func:`ensure_index`'s report."""

    ds: object
    questions: list
    reader: object
    data: object
    embedder: object
    default: object
    index: dict
    base: Path


def open_set(es: EvalSet, work: Path) -> OpenedSet:
    """Convert ``es``'s shared data, build its index unless an equal one is there, read its
    questions and open the index (the embedder warmed up)."""
    ds = DATASETS[es.dataset]
    base = work / es.work
    ds.convert(base)
    index = ensure_index(base / "corpus", base / "index", list(es.index_args), base / "logs" / "index.log")
    questions = read_jsonl(base / f"questions_{es.setting}.jsonl")
    reader, data, embedder, default = open_set_index(base / "index")
    embedder.embed(["warm up"])
    return OpenedSet(ds, questions, reader, data, embedder, default, index, base)


def run_set(es: EvalSet, work: Path, names: set[str] | None, log=print, per_question: bool = False) -> dict:
    """Every configuration over every question of ``es``: aggregates per half, and with
    ``per_question`` each question's primary metric at 5 in question order
    (``scores[configuration][half]``, for comparing two indexes question by question)."""
    from vdgr_core.query.knowledge_base import KnowledgeBase

    opened = open_set(es, work)
    ds, questions, base = opened.ds, opened.questions, opened.base
    reader, data, embedder, default = opened.reader, opened.data, opened.embedder, opened.default
    out = {"note": es.note, "primary": es.primary, "index_args": list(es.index_args),
           "index_reused": opened.index["reused"], "embedding_model": _model_id(base / "index"),
           "questions": {h: sum(half_of(q["id"]) == h for q in questions) for h in HALVES}, "configs": {},
           **({"scores": {}} if per_question else {})}
    vectors = None        # one VectorSearch for every configuration (a small index's vectors load once)
    for name, over in configs(default.routes):
        if names and name not in names:
            continue
        cfg = default.model_copy(update=over)
        kb = KnowledgeBase(reader, data, cfg, embedder, vectors=vectors)
        vectors = kb.vectors
        t0 = time.perf_counter()
        scores = answer_questions(kb, questions, ds)
        out["configs"][name] = aggregate_halves(scores)
        if per_question:
            out["scores"][name] = {h: [q.get(f"{es.primary}@5") or 0.0 for q in scores[h]] for h in HALVES}
        _log_row(log, es, name, out["configs"][name], t0)
    for label, args, names_here in BUILD_VARIANTS:
        wanted = [c for c in names_here if not names or f"{c}, {label}" in names]
        if not wanted:
            continue
        folder = "index_" + "_".join(a.strip("-").replace("-", "_") for a in args)
        ensure_index(base / "corpus", base / folder, [*es.index_args, *args], base / "logs" / f"{folder}.log")
        v_reader, v_data, v_embedder, _ = open_set_index(base / folder)
        for c in wanted:
            cfg = default.model_copy(update=dict(configs(default.routes))[c])
            kb = KnowledgeBase(v_reader, v_data, cfg, v_embedder)
            t0 = time.perf_counter()
            scores = answer_questions(kb, questions, ds)
            out["configs"][f"{c}, {label}"] = aggregate_halves(scores)
            _log_row(log, es, f"{c}, {label}", out["configs"][f"{c}, {label}"], t0)
    return out


def _model_id(index: Path) -> str:
    """The embedding model id the index's manifest records (it names the vectors' precision)."""
    from vdgr_core.store.manifest import read_manifest

    return read_manifest(str(index)).embedding_model


def answer_questions(kb, questions: list[dict], ds) -> dict[str, list]:
    """Answer every question with ``kb`` and score it against its gold.

    Parameters
    ----------
    kb : KnowledgeBase
        The query front end, configured for one ablation row.
    questions : list of dict
        The set's questions (``id``, ``question``, ``gold`` and optionally ``domain``,
        ``version``, ``groups``).
    ds : object
        The set's converter from :data:`bench.prepare.datasets.DATASETS` (its ``ks`` are the cut-offs).

    Returns
    -------
    dict
        ``{half: [per-question score dict, ...]}`` for each half in :data:`bench.prepare.splits.HALVES`.
    """
    from vdgr_core.eval import score_result

    scores = {h: [] for h in HALVES}
    for q in questions:
        r = kb.query(q["question"], domain=q.get("domain"), version=q.get("version"),
                     groups=q.get("groups") or (), qid=q["id"])
        scores[half_of(q["id"])].append(score_result(r.model_dump(), q["gold"], ds.ks))
    return scores


def aggregate_halves(scores: dict[str, list]) -> dict:
    """Aggregate per-question scores for each half and for all questions.

    Parameters
    ----------
    scores : dict
        :func:`answer_questions`'s output.

    Returns
    -------
    dict
        ``{"dev": agg, "test": agg, "all": agg}`` with :func:`vdgr_core.eval.aggregate`'s
        metrics (and latency) in each.
    """
    from vdgr_core.eval import aggregate

    agg = {h: aggregate(scores[h]) for h in HALVES}
    agg["all"] = aggregate(scores["dev"] + scores["test"])
    return agg


def _log_row(log, es: EvalSet, name: str, agg: dict, t0: float) -> None:
    log(f"[ablation] {es.name} / {name}: {es.primary}@5 dev {agg['dev'].get(es.primary + '@5')} "
        f"test {agg['test'].get(es.primary + '@5')} ({time.perf_counter() - t0:.0f}s)")


def check(report: dict) -> list[str]:
    """Sets where ``full`` trails the best single route by more than :data:`SLACK` at 5."""
    bad = []
    for name, res in report["sets"].items():
        key = res["primary"] + "@5"
        cfgs = res["configs"]
        if "full" not in cfgs:
            continue
        full = cfgs["full"]["all"].get(key) or 0.0
        singles = {r: cfgs[r]["all"].get(key) or 0.0 for r in SINGLE_ROUTES if r in cfgs}
        if not singles:
            continue
        best = max(singles, key=singles.get)
        if full < singles[best] - SLACK - 1e-9:
            bad.append(f"{name}: full {key} {full:.3f} < {best} {singles[best]:.3f} - {SLACK}")
    return bad


#: metric key -> column heading, by a set's primary metric
COLS = {"hit": [("hit@1", "R@1"), ("hit@5", "R@5"), ("hit@10", "R@10"), ("mrr", "MRR")],
         "src_recall": [("src_recall@1", "R@1"), ("src_recall@5", "R@5"), ("src_recall@10", "R@10"),
                        ("src_mrr", "MRR")],
         "value_hit": [("value_hit@1", "value@1"), ("value_hit@5", "value@5"), ("value_hit@10", "value@10"),
                       ("src_mrr", "doc MRR"), ("d_match", "D-match"), ("c_match", "C-match")]}


def fmt_metric(key: str, v) -> str:
    """One table cell: ``-`` for a missing value, MRR-like keys as 0.xxx, rates in percent.

    Parameters
    ----------
    key : str
        The metric key (``hit@5``, ``src_mrr``...): keys holding ``mrr`` stay fractions.
    v : float or None
        The value.

    Returns
    -------
    str
        The formatted cell.
    """
    if v is None:
        return "-"
    return f"{v:.3f}" if "mrr" in key else f"{100 * v:.1f}"


# (set, metric, at least, label): the retrieval goals of the issue, read on the test halves
GOALS = (("s10", "hit@5", 0.96, "S10 R@5 >= 96"), ("s10", "hit@1", 0.82, "S10 R@1 >= 82"),
         ("musique", "src_recall@5", 0.68, "MuSiQue R@5 >= 68"), ("dcd", "value_hit@5", 0.97, "DCD value@5 >= 97"),
         ("dcd_natural", "value_hit@5", 0.97, "DCD natural phrasing value@5 >= 97"))
P95_GOAL_MS = 150.0


def goals_table(report: dict) -> list[str]:
    """Markdown rows: each goal, the full configuration's test-half and dev-half figures."""
    sets = report["sets"]
    rows = ["#### goals (full configuration; the goals are read on the test halves)", "",
            "| goal | test | dev | met on test |", "|---|---|---|---|"]
    for name, key, least, label in GOALS:
        full = sets.get(name, {}).get("configs", {}).get("full")
        if full is None:
            continue
        t, d = full["test"].get(key), full["dev"].get(key)
        rows.append(f"| {label} | {fmt_metric(key, t)} | {fmt_metric(key, d)} | {'yes' if t is not None and t >= least else 'no'} |")
    for name, res in sets.items():
        cfgs = res["configs"]
        if "full" not in cfgs:
            continue
        key = res["primary"] + "@5"
        singles = {r: cfgs[r]["test"].get(key) or 0.0 for r in SINGLE_ROUTES if r in cfgs}
        if singles:
            best = max(singles, key=singles.get)
            f = cfgs["full"]["test"].get(key) or 0.0
            rows.append(f"| {name}: full >= best single route ({best}) at 5, 1 point slack | {fmt_metric(key, f)} vs "
                        f"{fmt_metric(key, singles[best])} | - | {'yes' if f >= singles[best] - SLACK - 1e-9 else 'no'} |")
        p95 = (cfgs["full"]["all"].get("latency") or {}).get("p95_ms")
        if p95 is not None:
            rows.append(f"| {name}: full p95 <= {P95_GOAL_MS:.0f} ms (all questions) | {p95} | - | "
                        f"{'yes' if p95 <= P95_GOAL_MS else 'no'} |")
    return rows + [""]


def block_header(title: str, report: dict) -> list[str]:
    """The first lines of a BENCHMARKS.md block: title, command, date and commit, machine."""
    m = report["machine"]
    return [f"### {title}", "", f"- command: `{report['command']}`",
            f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
            machine_line(m)]


def config_rows(configs: dict, cols) -> list[str]:
    """A Markdown table: one row per configuration, dev / test / all per metric of ``cols``,
    then p50 / p95 latency over all questions."""
    head = ["configuration", *[f"{h} dev / test / all" for _, h in cols], "p50 / p95 ms (all)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cfg, agg in configs.items():
        cells = [" / ".join(fmt_metric(k, agg[h].get(k)) for h in ("dev", "test", "all")) for k, _ in cols]
        lat = agg["all"].get("latency") or {}
        lines.append("| " + " | ".join([cfg, *cells, f"{lat.get('p50_ms')} / {lat.get('p95_ms')}"]) + " |")
    return lines + [""]


def write_report(name: str, report: dict, text: str) -> None:
    """``bench/out/<name>.json`` and the block ``name`` where it lives (BENCHMARKS.md, or
    docs/RESEARCH.md for research prototypes: ``update_benchmarks_md.write_block``)."""
    from bench.report.update_benchmarks_md import write_block

    (REPO / "bench" / "out" / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    write_block(name, text)


def embedding_lines(report: dict) -> list[str]:
    """The header line naming the embedding model id (model, precision, call scheme) each
    set's index was built with, as its manifest records it: one line when all sets agree."""
    models = {n: r.get("embedding_model") for n, r in report["sets"].items()}
    if not any(models.values()):
        return []
    lead = "- embedding model id of the indexes (manifest; `minilm:<model>:<precision>:<call scheme>`): "
    if len(set(models.values())) == 1:
        return [lead + f"`{next(iter(models.values()))}` (all sets)"]
    return [lead + "; ".join(f"{n} `{m}`" for n, m in models.items())]


def render(report: dict) -> str:
    """Markdown: one table per set, rows = configurations, dev | test | all per metric."""
    lines = [*block_header("ablation", report),
             "- halves: development / test by sha256(question id) (bench/prepare/splits.py); methods and "
             "constants were chosen on the development halves",
             "- latency: `trace.timings_ms.total` of `KnowledgeBase.query`, one question at a time, "
             "embedding the question included",
             *embedding_lines(report), ""]
    for name, res in report["sets"].items():
        cols = COLS[res["primary"]]
        q = res["questions"]
        lines += [f"#### {name}: {res['note']} (dev {q['dev']}, test {q['test']} questions)", ""]
        lines += config_rows(res["configs"], cols)
    lines += goals_table(report)
    bad = report.get("check")
    if bad is not None:
        lines.append("Check (full >= best single route - 1 point at 5, all questions): "
                     + ("passed" if not bad else "FAILED: " + "; ".join(bad)))
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--configs", help="comma-separated configuration names (default: all)")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--check", action="store_true", help="exit 1 when full trails the best single route")
    ap.add_argument("--write", action="store_true", help="write bench/out/ablation.json and BENCHMARKS.md")
    ap.add_argument("--embedding-precision", choices=["fp32", "bf16", "int8"],
                    help="build every set's index at this precision, in work folders <work>_<precision> "
                         "(default: the host's `auto` precision, in the usual folders)")
    a = ap.parse_args(argv)
    sets = {s.strip(): SETS[s.strip()] for s in a.sets.split(",")}
    if a.embedding_precision:
        sets = {n: with_precision(es, a.embedding_precision) for n, es in sets.items()}
    names = {c.strip() for c in a.configs.split(",")} if a.configs else None
    report = {"kind": "ablation",
              "command": "python -m bench.quality.ablation " + " ".join(argv if argv is not None else sys.argv[1:]),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "sets": {}}
    for s, es in sets.items():
        report["sets"][s] = run_set(es, a.work.resolve(), names)
    bad = check(report)
    report["check"] = bad
    text = render(report)
    print(text)
    if a.write:
        write_report("ablation", report, text)
    if a.check and bad:
        print("[ablation] check failed:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
