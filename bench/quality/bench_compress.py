"""Context compression: evidence tokens saved and answer support kept, with the scripted LLM.

``python -m bench.quality.bench_compress [--work bench/work] [--embedding minilm|hashing] [--budgets 0,300,600]``

The examples corpus index of ``bench.performance.bench_serve`` answers the questions of
``examples/questions.jsonl`` through the LLM path against the scripted OpenAI-compatible server
of the tests (``tests/support/openai_server.py``), once per context budget (0 = no
compression), with the same retrieval (routing, TOC, reflection offline: the scripted server
answers only the answer call). The scripted model answers *only from its prompt*: the three
prompt sentences sharing most words with the question, each cited ``[n]``, so what compression
removes from the prompt can no longer be in the answer. Measured per budget:

- evidence tokens in the prompt (``count_tokens``: words and punctuation) and the share saved;
- prompt tokens (system + user message);
- answer support: the share of answer sentences the *full* (uncompressed) evidence supports
  (the answer screen's test, ``screen_answer``);
- ROUGE-L F1 of the answer against the reference answer.

Report: ``bench/out/compress.json``, merged into BENCHMARKS.md (block ``compress``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import shlex
import sys
from pathlib import Path

from bench.common import REPO, read_jsonl
from bench.performance.bench_serve import build_examples_index
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine
from schemas.config import EmbeddingConfig, LLMConfig, QueryConfig
from tests.support.openai_server import ScriptedOpenAIServer
from vdgr_core.eval.rouge import rouge_l_f1
from vdgr_core.query.compress import count_tokens
from vdgr_core.query.guardrails import screen_answer
from vdgr_core.query.textutil import overlap, terms
from vdgr_core.sentences import split_sentences

_BLOCK = re.compile(r"\[(\d+)\] [^\n]*\n<<<EVIDENCE id=\w+>>>\n(.*?)\n<<<END EVIDENCE>>>", re.S)
_QUESTION = re.compile(r"<<<QUESTION id=\w+>>>\n(.*?)\n<<<END QUESTION>>>", re.S)


def extractive_model(request: dict) -> str:
    """The scripted LLM: the 3 prompt sentences closest to the question, cited, in prompt order."""
    user = request["messages"][-1]["content"]
    q = _QUESTION.search(user)
    qterms = terms(q.group(1) if q else "")
    cands = []
    for n, text in _BLOCK.findall(user):
        for pos, s in enumerate(split_sentences(text.replace(" … ", " "))):
            if len(s.split()) >= 3:
                cands.append((overlap(qterms, s), int(n), pos, s.strip()))
    best = sorted(cands, key=lambda c: (-c[0], c[1], c[2]))[:3]
    best.sort(key=lambda c: (c[1], c[2]))
    return " ".join(f"{s.rstrip('.')} [{n}]." for _, n, _, s in best) or "The evidence does not say."


def support(answer: str, evidence_texts: list[str]) -> float:
    """Share of answer sentences the evidence supports (the answer screen's word test)."""
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", answer) if s.strip()]
    if not sentences:
        return 0.0
    unsupported = screen_answer(answer, evidence_texts).unsupported
    return 1.0 - len(unsupported) / len(sentences)


def measure(index: Path, questions: list[dict], budgets: list[int]) -> dict:
    from vdgr_core.query.knowledge_base import KnowledgeBase
    from vdgr_core.store.manifest import read_manifest

    m = read_manifest(str(index))
    emb = EmbeddingConfig.for_index(m.embedding_model, m.dim)
    out = {}
    with ScriptedOpenAIServer() as server:
        # only the answer call goes to the scripted model; everything else stays offline
        def respond(request):
            if request.get("response_format"):
                return (400, "structured calls are not scripted in this benchmark")
            return extractive_model(request)

        server.responder = respond
        base = None
        for budget in budgets:
            llm = LLMConfig(base_url=server.url, model="scripted", max_retries=0, backoff_s=0)
            cfg = QueryConfig(embedding=emb, llm=llm, context_budget_tokens=budget)
            if base is None:
                base = KnowledgeBase.open(str(index), cfg)
                kb = base
            else:
                kb = KnowledgeBase.open(str(index), cfg, embedder=base.embedder)
            rows = []
            for q in questions:
                n_before = len(server.chat_requests())
                r = kb.query(q["question"], domain=q.get("domain"), version=q.get("version"))
                answers = [x for x in server.chat_requests()[n_before:] if not x.get("response_format")]
                comp = next((s.data for s in r.trace.steps if s.stage == "compress"), None)
                if not answers or comp is None:       # a corrective answer: no LLM call
                    continue
                prompt = sum(count_tokens(msg["content"]) for msg in answers[-1]["messages"])
                rows.append({"id": q["id"], "evidence_tokens": comp["tokens_after"],
                             "evidence_tokens_full": comp["tokens_before"], "prompt_tokens": prompt,
                             "support": support(r.answer, [e.text for e in r.evidence]),
                             "rouge_l": rouge_l_f1(r.answer, q["gold"]["answer"])})
            n = len(rows) or 1
            full = sum(x["evidence_tokens_full"] for x in rows)
            kept = sum(x["evidence_tokens"] for x in rows)
            out[str(budget)] = {
                "answered_by_llm": len(rows),
                "evidence_tokens_mean": round(kept / n, 1),
                "evidence_tokens_full_mean": round(full / n, 1),
                "saving": round(1 - kept / full, 4) if full else 0.0,
                "prompt_tokens_mean": round(sum(x["prompt_tokens"] for x in rows) / n, 1),
                "support": round(sum(x["support"] for x in rows) / n, 4),
                "rouge_l": round(sum(x["rouge_l"] for x in rows) / n, 4),
                "per_question": rows,
            }
    return out


def render(report: dict) -> str:
    m = report["machine"]
    lines = ["### compress (context compression, scripted LLM)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(m),
             f"- index: examples/corpus ({report['embedding']} embeddings), the {report['questions']} questions of "
             "examples/questions.jsonl with a reference answer, k=10; the scripted model answers with the 3 prompt sentences closest to "
             "the question; tokens = words and punctuation marks", "",
             "| budget (tokens) | answered by the LLM | evidence tokens (mean) | saved | prompt tokens (mean) | "
             "answer support | ROUGE-L |", "|---|---|---|---|---|---|---|"]
    for b, v in report["results"].items():
        lines.append(f"| {'none' if b == '0' else b} | {v['answered_by_llm']} | {v['evidence_tokens_mean']} | "
                     f"{100 * v['saving']:.1f}% | {v['prompt_tokens_mean']} | {100 * v['support']:.1f}% | "
                     f"{v['rouge_l']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--embedding", default="minilm", choices=["minilm", "hashing"])
    ap.add_argument("--budgets", default="0,300,600")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    a = ap.parse_args(argv)
    index = build_examples_index(a.work / "serve", a.embedding)
    questions = [q for q in read_jsonl(REPO / "examples" / "questions.jsonl") if q["gold"].get("answer")]
    budgets = [int(b) for b in a.budgets.split(",")]
    results = measure(index, questions, budgets)
    report = {"dataset": "compress", "kind": "compress",
              "command": "python -m bench.quality.bench_compress " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:])),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "embedding": a.embedding,
              "questions": len(questions), "results": results}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "compress.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    from bench.report.update_benchmarks_md import update
    update(REPO / "BENCHMARKS.md", a.out, ["compress"])
    print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
