"""A block is published into whichever of BENCHMARKS.md / docs/RESEARCH.md holds it."""
from __future__ import annotations

import json

from bench.report import update_benchmarks_md as ub


def _docs(tmp_path, monkeypatch):
    bench, research = tmp_path / "BENCHMARKS.md", tmp_path / "RESEARCH.md"
    bench.write_text(ub.merge_block("# Benchmarks\n", "latency", "old latency\n"))
    research.write_text(ub.merge_block("# Research\n", "proto", "old proto\n"))
    monkeypatch.setattr(ub, "DOC_FILES", (bench, research))
    return bench, research


def test_publish_finds_a_moved_block(tmp_path, monkeypatch):
    bench, research = _docs(tmp_path, monkeypatch)
    assert ub.block_file("proto") == research and ub.block_file("latency") == bench
    assert ub.block_file("new") == bench                      # a new block goes to BENCHMARKS.md
    ub.publish({"x": 1}, tmp_path / "out" / "proto.json", "proto", "new proto\n")
    ub.publish({"x": 1}, tmp_path / "out" / "latency.json", "latency", "new latency\n")
    assert "new proto" in research.read_text() and "old proto" not in research.read_text()
    assert "proto" not in bench.read_text()                   # not appended a second time
    assert "new latency" in bench.read_text() and "latency" not in research.read_text()
    ub.publish({"x": 1}, tmp_path / "out" / "fresh.json", "fresh", "fresh block\n")
    assert "<!-- bench:fresh:begin -->" in bench.read_text()


def test_update_merges_a_report_into_the_file_that_holds_its_block(tmp_path, monkeypatch):
    bench, research = _docs(tmp_path, monkeypatch)
    out = tmp_path / "out"
    out.mkdir()
    report = {"dataset": "proto", "command": "c", "date": "d", "machine": {}, "rows": []}
    (out / "proto.json").write_text(json.dumps(report))
    monkeypatch.setattr(ub, "render", lambda r: "rendered proto\n")
    assert ub.update(bench, out, others=(research,)) == ["proto"]
    assert "rendered proto" in research.read_text()
    assert "proto" not in bench.read_text()


def test_a_run_under_instruction_caps_says_so_on_its_machine_line(monkeypatch):
    from bench.report.markdown import machine_line
    from bench.report.provenance import CAP_VARIABLES, machine

    for name in CAP_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert "capped" not in machine() and "capped" not in machine_line(machine())
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "avx2")
    monkeypatch.setenv("VDGR_CPU_FLAGS", "avx2 fma")
    m = machine()
    assert m["capped"] == "ATEN_CPU_CAPABILITY=avx2 VDGR_CPU_FLAGS=avx2 fma"
    assert "**capped** by `ATEN_CPU_CAPABILITY=avx2 VDGR_CPU_FLAGS=avx2 fma`" in machine_line(m)
