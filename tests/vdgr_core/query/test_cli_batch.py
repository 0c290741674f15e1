"""Batch JSONL, the CLI (in-process) and the no-Beam guarantee."""
import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from runners import query_cli
from tests.support.tiny_index import SECRET_TITLE
from vdgr_core.query.result import QueryResult


def _args(argv):
    parser = argparse.ArgumentParser(prog="vdgr")
    query_cli.register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["query", *argv])


def test_query_batch_matches_single_queries(kb):
    items = [{"id": "a", "question": "How many days of annual leave?"},
             {"id": "b", "question": SECRET_TITLE, "groups": ["hr"], "domain": "HR_Policies"},
             {"id": "c", "question": "battery", "domain": "Galaxy_S10", "version": "2.0"}]
    out = kb.query_batch(items)
    assert [r.id for r in out] == ["a", "b", "c"]
    single = kb.query("How many days of annual leave?")
    assert [e.chunk_id for e in out[0].evidence] == [e.chunk_id for e in single.evidence]
    assert any(SECRET_TITLE in e.path for e in out[1].evidence)
    assert {e.version for e in out[2].evidence} == {"2.0"}


def test_cli_single_question_json(tiny_index, capsys):
    rc = query_cli.run(_args(["--index", tiny_index, "Wireless PowerShare", "--json", "--k", "3",
                              "--domain", "Galaxy_S10", "--version", "1.0"]))
    assert rc == 0
    res = QueryResult.model_validate_json(capsys.readouterr().out)
    assert 0 < len(res.evidence) <= 3
    assert res.evidence[0].title == "Wireless PowerShare" and res.evidence[0].version == "1.0"
    assert set(json.loads(res.model_dump_json())) == {"id", "question", "answer", "routing", "evidence", "trace", "citations"}


def test_cli_text_and_explain(tiny_index, capsys):
    rc = query_cli.run(_args(["--index", tiny_index, "annual leave days", "--explain",
                              "--routes", "hybrid,toc", "--no-backtrack", "--no-reflection"]))
    out = capsys.readouterr().out
    assert rc == 0
    assert "[1] HR_Policies > Policies > Leave Policy" in out
    assert "Routing: HR_Policies" in out
    assert "Timings (ms)" in out and "route_graph" not in out


def test_cli_batch_jsonl(tiny_index, tmp_path):
    src = tmp_path / "in.jsonl"
    dst = tmp_path / "out.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in [
        {"id": "1", "question": "Bluetooth headphones"},
        {"id": "2", "question": SECRET_TITLE},
        {"id": "3", "question": SECRET_TITLE, "groups": ["hr"]},
    ]) + "\n")
    rc = query_cli.run(_args(["--index", tiny_index, "--questions", str(src), "--out", str(dst)]))
    assert rc == 0
    rows = [QueryResult.model_validate_json(line) for line in dst.read_text().splitlines()]
    assert [r.id for r in rows] == ["1", "2", "3"]
    assert not any(SECRET_TITLE in e.path for e in rows[1].evidence)
    assert any(SECRET_TITLE in e.path for e in rows[2].evidence)


def test_cli_errors_are_reported(tmp_path, capsys):
    assert query_cli.run(_args(["--index", str(tmp_path), "q"])) == 2
    assert "manifest.json" in capsys.readouterr().err


def test_cli_rejects_bad_group(tiny_index, capsys):
    assert query_cli.run(_args(["--index", tiny_index, "q", "--groups", "x' OR 1=1"])) == 2
    assert "invalid access group" in capsys.readouterr().err


def test_query_side_never_imports_beam(tiny_index):
    code = textwrap.dedent(f"""
        import sys
        from vdgr_core.query import KnowledgeBase
        from schemas.config import QueryConfig, EmbeddingConfig
        kb = KnowledgeBase.open({tiny_index!r}, QueryConfig(embedding=EmbeddingConfig(kind="hashing", dim=64)))
        r = kb.query("Wireless PowerShare", groups=["hr"])
        assert r.evidence
        assert "apache_beam" not in sys.modules, "apache_beam was imported"
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(Path(__file__).resolve().parents[3]))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_cli_deny_list_refuses_before_retrieval(tiny_index, tmp_path, capsys):
    deny = tmp_path / "deny.txt"
    deny.write_text("# blocked topics\nPowerShare\n", encoding="utf-8")
    rc = query_cli.run(_args(["--index", tiny_index, "Wireless PowerShare", "--json",
                              "--deny-list", str(deny)]))
    assert rc == 0
    res = QueryResult.model_validate_json(capsys.readouterr().out)
    assert res.evidence == [] and res.routing == []


def test_text_rendering_names_a_version_only_when_there_is_one():
    from vdgr_core.query.result import Evidence, QueryResult, Trace
    from vdgr_core.query.trace import render_text

    def ev(version):
        return Evidence(chunk_id="c", domain="Ops", version=version, source="Ops/runbook.md", path=["Ops", "Runbook"],
                        title="Runbook", text="Restart the agent.", score=0.5, routes=["bm25"])

    result = QueryResult(id="q", question="?", answer="Restart the agent. [1]", routing=[],
                         evidence=[ev(""), ev("2.0")], trace=Trace(llm_calls=0, timings_ms={}, steps=[]))
    text = render_text(result)
    assert "(Ops/runbook.md) score" in text and "(Ops/runbook.md, v2.0) score" in text
