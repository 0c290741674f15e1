"""bench/performance/bench_scale.py and bench/prepare/grow_corpus.py: measuring a process, rendering, growing."""
import sys

from bench.performance.bench_scale import ROUTES, measured_run, render, stages_of
from bench.prepare.grow_corpus import change_documents, revise_markdown


def test_measured_run_reports_the_peak_rss_of_the_process(tmp_path):
    # 200 MB held for a moment: the peak is seen whether sampled or read from rusage
    r = measured_run([sys.executable, "-c", "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"],
                     tmp_path / "log.txt")
    assert r["driver_peak_mb"] >= 190 or r["rusage_peak_mb"] >= 190
    assert r["children_peak_mb"] == 0
    assert (tmp_path / "log.txt").read_text().startswith("$ ")


def test_render_lists_each_size_and_the_sizes_not_run():
    lat = {n: {"p50_ms": 1.0, "p95_ms": 2.0, "n": 50} for n in ROUTES}
    row = {"chunks": 10537, "documents": 1161, "build_s": 43.0, "chunks_per_s": 245, "build_driver_peak_mb": 841,
           "build_children_peak_mb": 0, "index_mb": 116.2, "open_s": 1.1, "query_peak_mb": 422, "update_s": 12.3,
           "update_ratio": 0.286, "update_driver_peak_mb": 361,
           "ann_recall_at_10": {"contents": {"scoped": "exact", "unscoped": "exact"},
                                "directories": {"scoped": 0.99, "unscoped": 0.97}}, "latency": lat,
           "update_equals_rebuild": True}
    text = render({"command": "python -m bench.performance.bench_scale --skip-1m", "date": "d", "commit": "c",
                   "machine": "m", "results": [row], "not_run": ["1m"]})
    assert "| 10,537 | 1,161 | 43.0 | 245 | 841 / 0 |" in text
    assert "first no-domain pass" not in text                  # a row of an earlier run: not measured
    again = render({"command": "c", "date": "d", "commit": "c", "machine": "m",
                    "results": [{**row, "no_domain_major_faults": 1234}], "not_run": []})
    assert "first no-domain pass (pages read from disk; 0: the layouts were in the page cache): 10,537 chunks 1,234" in again
    assert "| exact / exact | 0.99 / 0.97 | True |" in text
    assert "not run: 1m" in text
    assert text.count("1.0 / 2.0") == len(ROUTES)
    assert "all routes (no domain) p50 / p95 ms" in text
    assert "| 422 | 12.3 |" in text                    # a row measured before the split: one figure


def test_the_query_rss_shows_the_no_domain_peak_and_the_anonymous_part():
    from bench.performance.bench_scale import query_rss

    assert query_rss({"query_peak_mb": 313, "query_no_domain_peak_mb": 4106, "query_anon_peak_mb": 1234}) == \
        "313; no domain 4,106; anonymous 1,234"
    assert query_rss({"query_peak_mb": 313}) == "313"


def test_a_row_measured_before_the_no_domain_columns_renders_a_dash_there():
    lat = {n: {"p50_ms": 1.0, "p95_ms": 2.0, "n": 50} for n in ROUTES if "no domain" not in n}
    row = {"chunks": 10537, "documents": 1161, "build_s": 43.0, "chunks_per_s": 245, "build_driver_peak_mb": 841,
           "build_children_peak_mb": 0, "index_mb": 116.2, "open_s": 1.1, "query_peak_mb": 422, "update_s": 12.3,
           "update_ratio": 0.286, "update_driver_peak_mb": 361,
           "ann_recall_at_10": {"contents": {"scoped": "exact", "unscoped": "exact"},
                                "directories": {"scoped": "exact", "unscoped": "exact"}}, "latency": lat}
    text = render({"command": "c", "date": "d", "commit": "c", "machine": "m", "results": [row], "not_run": []})
    latency_row = [line for line in text.splitlines() if line.startswith("| 10,537 |") and "1.0 / 2.0" in line][0]
    assert latency_row.endswith("| 1.0 / 2.0 | - | - | - | - |")


def test_grown_versions_revise_some_paragraphs_and_never_headings():
    text = "# Title\n\n" + "\n\n".join(f"Paragraph {i}." for i in range(200))
    assert revise_markdown(text, "a/b.md", 1) == text
    v2 = revise_markdown(text, "a/b.md", 2)
    assert v2 == revise_markdown(text, "a/b.md", 2)          # deterministic
    revised = [line for line in v2.split("\n") if "Revised in release 2" in line]
    assert 5 <= len(revised) <= 40 and v2.startswith("# Title\n")


def test_change_documents_changes_one_in_a_hundred(tmp_path):
    for i in range(250):
        (tmp_path / f"d{i:03d}.md").write_text(f"# D{i}\n\nText.\n", encoding="utf-8")
    changed = change_documents(tmp_path, 100, "T")
    assert [p.name for p in changed] == ["d000.md", "d100.md", "d200.md"]
    assert "Service bulletin T0" in (tmp_path / "d000.md").read_text(encoding="utf-8")
    assert "Service bulletin" not in (tmp_path / "d001.md").read_text(encoding="utf-8")


def test_render_shows_both_ann_recalls_and_the_stage_timings(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("  embeddings  5 computed\n  stages (s)    scan_s 0.4, pipeline_s 140.0, commit_s 35.5\n")
    assert stages_of(log) == {"scan_s": 0.4, "pipeline_s": 140.0, "commit_s": 35.5}
    assert stages_of(tmp_path / "build.log") and not stages_of(_empty(tmp_path))
    lat = {n: {"p50_ms": 1.0, "p95_ms": 2.0, "n": 50} for n in ROUTES}
    row = {"chunks": 107498, "documents": 11610, "build_s": 180.0, "chunks_per_s": 597, "build_driver_peak_mb": 1436,
           "build_children_peak_mb": 0, "index_mb": 850.3, "open_s": 0.005, "query_peak_mb": 806, "update_s": 13.5,
           "update_ratio": 0.075, "update_driver_peak_mb": 950, "latency": lat,
           "ann_recall_at_10": {"contents": {"index": {"scoped": 1.0, "unscoped": 0.7},
                                             "routes": {"scoped": 1.0, "unscoped": 0.99}},
                                "directories": {"index": {"scoped": 1.0, "unscoped": 0.65},
                                                "routes": {"scoped": "none", "unscoped": 0.98}}},
           "build_stages_s": stages_of(log), "update_stages_s": {"merge_s": 1.7}}
    text = render({"command": "c", "date": "d", "commit": "c", "machine": "m", "results": [row], "not_run": []})
    assert "| 1.0 / 0.7; routes 1.0 / 0.99 | 1.0 / 0.65; routes none / 0.98 |" in text
    assert "| 107,498 | scan_s 0.4, pipeline_s 140.0, commit_s 35.5 | merge_s 1.7 |" in text


def _empty(tmp_path):
    p = tmp_path / "empty.log"
    p.write_text("no stages here\n")
    return p


def _row(**extra) -> dict:
    """A 10k row of the report, measured by ``--sizes 10k`` at commit aaa, date d1."""
    lat = {n: {"p50_ms": 1.0, "p95_ms": 2.0, "n": 50} for n in ROUTES}
    return {"size": "10k", "chunks": 10537, "documents": 1161, "build_s": 29.6, "chunks_per_s": 356,
            "build_driver_peak_mb": 849, "build_children_peak_mb": 0, "index_mb": 129.8, "open_s": 0.005,
            "query_peak_mb": 305, "update_s": 5.8, "update_ratio": 0.196, "update_driver_peak_mb": 362,
            "latency": lat,
            "ann_recall_at_10": {"contents": {"index": {"scoped": "exact", "unscoped": "exact"}},
                                 "directories": {"index": {"scoped": "exact", "unscoped": "exact"}}},
            "command": "python -m bench.performance.bench_scale --sizes 10k", "commit": "aaa", "date": "d1", **extra}


def test_a_row_measured_again_names_the_query_command():
    row = _row(query_command="python -m bench.performance.bench_scale --query-only", query_commit="bbb",
               query_date="d2")
    text = render({"command": "c", "date": "d", "commit": "c", "machine": "m", "results": [row], "not_run": []})
    assert ("10,537 chunks: `python -m bench.performance.bench_scale --sizes 10k` at aaa, d1; open, query RSS, "
            "latency and ANN recall: `python -m bench.performance.bench_scale --query-only` at bbb, d2") in text


def test_a_row_whose_update_was_measured_again_names_the_update_command():
    row = _row(update_command="python -m bench.performance.bench_scale --update-only", update_commit="ccc",
               update_date="d3")
    text = render({"command": "c", "date": "d", "commit": "c", "machine": "m", "results": [row], "not_run": []})
    assert ("10,537 chunks: `python -m bench.performance.bench_scale --sizes 10k` at aaa, d1; 1% update: "
            "`python -m bench.performance.bench_scale --update-only` at ccc, d3") in text


def test_update_only_measures_the_update_again_and_keeps_the_build(tmp_path, monkeypatch):
    import json

    from bench.performance import bench_scale

    corpus, index = tmp_path / "corpus_10k", tmp_path / "index_10k"
    (corpus / "d").mkdir(parents=True)
    for i in range(3):
        (corpus / "d" / f"a{i}.md").write_text(f"# A{i}\n\nText {i}.\n", encoding="utf-8")
    index.mkdir()
    (index / "manifest.json").write_text("{}", encoding="utf-8")
    out = tmp_path / "scale.json"
    out.write_text(json.dumps({"results": [{"size": "10k", "build_s": 20.0, "update_s": 9.0}], "not_run": []}))
    calls = []

    def fake_run(cmd, log):
        calls.append(cmd)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("  stages (s)    scan_s 0.1, commit_s 0.4\n", encoding="utf-8")
        return {"wall_s": 1.0, "driver_peak_mb": 100, "rusage_peak_mb": 101}

    monkeypatch.setattr(bench_scale, "measured_run", fake_run)
    monkeypatch.setattr(bench_scale, "write_report", lambda a, command, results, not_run: out.write_text(
        json.dumps({"results": results})))
    assert bench_scale.main(["--sizes", "10k", "--update-only", "--work", str(tmp_path), "--out", str(out)]) == 0
    row = json.loads(out.read_text())["results"][0]
    assert calls and calls[0][-4:] == [str(corpus), "--index", str(index), "-q"] and "update" in calls[0]
    assert row["build_s"] == 20.0 and row["update_s"] == 1.0 and row["update_ratio"] == 0.05
    assert row["update_stages_s"] == {"scan_s": 0.1, "commit_s": 0.4}
    assert row["update_command"].startswith("python -m bench.performance.bench_scale --sizes 10k --update-only")
    assert "Service bulletin" in (corpus / "d" / "a0.md").read_text(encoding="utf-8")


def test_growing_from_an_empty_source_fails_instead_of_stamping_an_empty_corpus(tmp_path, monkeypatch, capsys):
    import bench.prepare.grow_corpus as grow_corpus

    (tmp_path / "source").mkdir()
    (tmp_path / "ok" / "Galaxy_X" / "Manual").mkdir(parents=True)
    (tmp_path / "ok" / "Galaxy_X" / "Manual" / "intro.md").write_text("# Intro\n\nCharge the phone.\n")
    monkeypatch.setattr(grow_corpus, "emanual_all_corpus", lambda work: tmp_path / "source")
    assert grow_corpus.main(["--out", str(tmp_path / "grown"), "--versions", "2"]) == 1
    assert "no documents grown" in capsys.readouterr().err
    monkeypatch.setattr(grow_corpus, "emanual_all_corpus", lambda work: tmp_path / "ok")
    assert grow_corpus.main(["--out", str(tmp_path / "grown"), "--versions", "2"]) == 0
