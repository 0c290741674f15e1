"""Runner pieces that need no index: query rows, scoring a results file, Markdown merge."""
import json

from bench import vdgr_cli
from bench.common import write_jsonl
from bench.quality.run_eval import query_rows, score_file
from bench.report import update_benchmarks_md as ub
from bench.report.markdown import render


def _report():
    return {"dataset": "toy", "command": "python -m bench.quality.run_eval toy", "date": "2026-01-01 00:00 UTC",
            "machine": {"uname": "Linux x", "nproc": 4}, "commit": "abc", "index": {"reused": True},
            "questions": {"s": 2}, "columns": [["hit@1", "R@1"], ["mrr", "MRR"]],
            "results": {"s": {"bm25": {"hit@1": 0.5, "mrr": 0.75, "latency": {"p50_ms": 3.0, "p95_ms": 12.0},
                                       "llm_calls": 0.0},
                              "full": {"error": "vdgr query exited 2"}}},
            "reference": [["BM25 paper", {"hit@1": 0.72}]], "dropped_flags": {"full": ["--no-x"]}}


def test_query_rows_strip_gold():
    rows = query_rows([{"id": "1", "question": "q", "domain": "d", "gold": {"paths": [["a"]]}}])
    assert rows == [{"id": "1", "question": "q", "domain": "d"}]


def test_score_file_counts_missing_results(tmp_path):
    qs = [{"id": "1", "question": "q", "gold": {"paths": [["A", "B"]]}},
          {"id": "2", "question": "q", "gold": {"paths": [["A", "C"]]}}]
    ev = {"domain": "d", "path": ["d", "A", "B"], "source": "d/a.md", "text": ""}
    write_jsonl(tmp_path / "r.jsonl", [{"id": "1", "answer": "", "routing": [], "evidence": [ev],
                                        "trace": {"llm_calls": 1, "timings_ms": {"total": 5}}}])
    agg, scores = score_file(qs, tmp_path / "r.jsonl", (1,))
    assert agg["hit@1"] == 0.5 and agg["missing"] == 0.5 and scores[1]["id"] == "2"


def test_render_and_merge(tmp_path):
    md = render(_report())
    assert "| s | bm25 | 50.0 | 0.750 | 3.0 | 12 | 0.00 |" in md
    assert "| s | full | error" in md and "--no-x" in md and "Linux x" in md
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "toy.json").write_text(json.dumps(_report()))
    target = tmp_path / "BENCHMARKS.md"
    target.write_text("# Benchmarks\n\nHand-written notes.\n")
    assert ub.update(target, tmp_path / "out") == ["toy"]
    ub.update(target, tmp_path / "out")
    text = target.read_text()
    assert text.count("<!-- bench:toy:begin -->") == 1 and "Hand-written notes." in text


def test_supported_flags_drop_unknown_options(monkeypatch):
    monkeypatch.setattr(vdgr_cli, "query_flags", lambda: frozenset({"--routes", "--no-routing"}))
    keep, dropped = vdgr_cli.supported(["--routes", "bm25", "--no-backtrack", "--no-routing"])
    assert keep == ["--routes", "bm25", "--no-routing"] and dropped == ["--no-backtrack"]


def test_latency_report_merges(tmp_path):
    rep = {"dataset": "latency", "kind": "latency", "command": "python -m bench.performance.bench_query",
           "date": "2026-01-01 00:00 UTC", "machine": {"uname": "Linux x", "nproc": 2}, "commit": None,
           "index": "idx", "repeat": 1, "questions": 50,
           "results": {name: {s: {"n": 50, "p50_ms": 10.0, "p95_ms": 20.0, "mean_ms": 12.0}
                              for s in ("all", "scoped", "named", "unscoped")}
                       for name in ("route 1", "all routes")}}
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "latency.json").write_text(json.dumps(rep))
    target = tmp_path / "BENCHMARKS.md"
    assert ub.update(target, tmp_path / "out") == ["latency"]
    text = target.read_text()
    assert "| all routes | named | 50 | 10.0 | 20.0 | 12.0 |" in text and "<!-- bench:latency:begin -->" in text


def test_a_second_run_keeps_the_first_runs_log(tmp_path):
    # a second build of an index being built is refused by the writer lock: its log lines go
    # after the running build's, never over them
    log = tmp_path / "index.log"
    assert vdgr_cli.run(["--help"], log)[0] == 0
    first = log.read_text()
    assert vdgr_cli.run(["query", "--help"], log)[0] == 0
    text = log.read_text()
    assert text.startswith(first) and len(text) > len(first)
    assert text.count("=== ") == 2 and "$ " in text.split(first, 1)[1]
