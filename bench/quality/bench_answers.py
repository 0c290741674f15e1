"""Offline (extractive) answers against reference answers: ROUGE-L and support, per half.

``python -m bench.quality.bench_answers [--work bench/work] [--sets s10,musique,examples] [--no-markdown]``

Every question of the sets with reference answers (E-Manual S10: 50 expert answers; MuSiQue:
100 short answers; the examples corpus: the questions of ``examples/questions.jsonl`` with an
answer) is retrieved once with the default configuration (the index of :mod:`bench.quality.ablation`
for S10 and MuSiQue, that of :mod:`bench.performance.bench_serve` for the examples). Two extractive answers
are then made from the same evidence, made inert first as the answer stage does
(:func:`vdgr_core.query.neutral.neutral_evidence`):

- ``sentences``: the answer before issue 29 (:func:`legacy_extractive_answer`, kept here as
  the baseline): the 3 evidence sentences (split at line breaks too) sharing most words with
  the question;
- ``units``: :func:`vdgr_core.query.answer.extractive_answer`: sentence-boundary units,
  procedures, table rows and commands whole, no headings, one part per version.

Measured per answer and averaged per half (:mod:`bench.prepare.splits`): ROUGE-L F1 against the
reference answer (:func:`vdgr_core.eval.rouge.rouge_l_f1`); support, the share of answer
sentences the evidence supports (the answer screen's word test, as in
:mod:`bench.quality.bench_compress`); answer length in words; and, for MuSiQue, whether an accepted
answer occurs in the answer. Report: ``bench/out/answers.json``, block ``answers``.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Sequence

from bench.common import REPO, read_jsonl
from bench.prepare.splits import HALVES, half_of
from vdgr_core.eval.rouge import rouge_l_f1

METHODS = ("sentences", "units")
SETS = ("s10", "musique", "examples")


def legacy_extractive_answer(question: str, evidence: Sequence) -> str:
    """The extractive answer before issue 29 (the baseline): the best 3 sentences of the top 5
    evidence items, split at sentence ends and at every line break, each cited ``[n]``."""
    from vdgr_core.query.answer import NO_ANSWER
    from vdgr_core.query.textutil import overlap, terms
    from vdgr_core.sentences import split_sentences

    if not evidence:
        return NO_ANSWER
    qterms = terms(question)
    scored = []
    for n, ev in enumerate(evidence[:5], 1):
        for pos, sent in enumerate(split_sentences(ev.text)):
            if len(sent) < 3:
                continue
            scored.append((overlap(qterms, sent) + 0.05 / n, n, pos, sent))
    if not scored:
        return NO_ANSWER
    scored.sort(key=lambda x: (-x[0], x[1], x[2]))
    best = [s for s in scored[:3] if s[0] > 0.05] or scored[:1]
    best.sort(key=lambda x: (x[1], x[2]))
    return " ".join(f"{sent.rstrip()} [{n}]" for _, n, _, sent in best)


def _index_and_questions(name: str, work: Path):
    if name == "examples":
        from bench.performance.bench_serve import build_examples_index

        index = build_examples_index(work / "serve", "minilm")
        qs = [q for q in read_jsonl(REPO / "examples" / "questions.jsonl") if q["gold"].get("answer")]
        return index, qs
    from bench.quality.ablation import SETS as EVAL_SETS, open_set

    opened = open_set(EVAL_SETS[name], work)
    return opened.base / "index", [q for q in opened.questions if q["gold"].get("answer")]


def _contains(answer: str, accepted: Sequence[str]) -> float:
    a = answer.casefold()
    return float(any(x.casefold() in a for x in accepted if x))


def measure_set(name: str, work: Path) -> dict:
    """Both answers for every question of set ``name``: per-question rows and per-half means."""
    from bench.quality.bench_compress import support
    from schemas.config import EmbeddingConfig, QueryConfig
    from vdgr_core.query.answer import extractive_answer
    from vdgr_core.query.knowledge_base import KnowledgeBase
    from vdgr_core.query.neutral import neutral_evidence
    from vdgr_core.store.manifest import read_manifest

    index, questions = _index_and_questions(name, work)
    m = read_manifest(str(index))
    kb = KnowledgeBase.open(str(index), QueryConfig(embedding=EmbeddingConfig.for_index(m.embedding_model, m.dim)))
    answerers = {"sentences": legacy_extractive_answer, "units": extractive_answer}
    rows = []
    for q in questions:
        r = kb.query(q["question"], domain=q.get("domain"), version=q.get("version"), with_answer=False)
        evidence = neutral_evidence(r.evidence)
        texts = [e.text for e in evidence]
        gold = q["gold"]
        accepted = gold.get("answers") or []
        row = {"id": q["id"], "half": half_of(q["id"])}
        for method, fn in answerers.items():
            ans = fn(q["question"], evidence)
            row[method] = {"rouge_l": rouge_l_f1(ans, gold["answer"]), "support": support(ans, texts),
                           "words": len(ans.split())}
            if accepted:
                row[method]["contains"] = _contains(ans, accepted)
        rows.append(row)
    halves = {}
    for half in HALVES:
        mine = [r for r in rows if r["half"] == half]
        halves[half] = {"questions": len(mine)}
        for method in METHODS:
            keys = mine[0][method].keys() if mine else ()
            halves[half][method] = {k: round(sum(r[method][k] for r in mine) / len(mine), 4) for k in keys}
    return {"questions": len(rows), "halves": halves, "per_question": rows}


def render(report: dict) -> str:
    from bench.report.markdown import machine_line

    lines = ["### answers (offline extractive answers against reference answers)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(report["machine"]),
             "- default configuration, k=10, MiniLM embeddings; both answers from the same (inert) evidence. "
             "`sentences`: the answer before issue 29 (3 best sentences, split at line breaks too); `units`: "
             "sentence-boundary units, procedures/rows/commands whole, no headings, one part per version. "
             "Support: share of answer sentences the evidence supports (the answer screen's word test); "
             "contains: an accepted answer occurs in the answer (MuSiQue)", "",
             "| set | half | questions | answer | ROUGE-L | support | contains | words (mean) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, res in report["sets"].items():
        for half in HALVES:
            h = res["halves"][half]
            for method in METHODS:
                v = h[method]
                cont = f"{100 * v['contains']:.1f}%" if "contains" in v else "-"
                lines.append(f"| {name} | {half} | {h['questions']} | {method} | {v.get('rouge_l', 0):.3f} | "
                             f"{100 * v.get('support', 0):.1f}% | {cont} | {v.get('words', 0):.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from bench.report.provenance import stamp
    from bench.report.update_benchmarks_md import publish

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    ap.add_argument("--no-markdown", action="store_true", help="do not merge the block into BENCHMARKS.md")
    a = ap.parse_args(argv)
    args = argv if argv is not None else sys.argv[1:]
    report = {"kind": "answers", **stamp("python -m bench.quality.bench_answers " + " ".join(shlex.quote(x) for x in args))}
    report["sets"] = {s: measure_set(s, a.work.resolve()) for s in (x.strip() for x in a.sets.split(",")) if s}
    publish(report, a.out / "answers.json", "answers", render(report), markdown=not a.no_markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
