"""The precision study's verdict and table from a report (no index built)."""
from bench.quality import bench_precision as bp


def _half(value: float) -> dict:
    return {"src_recall@5": value, "hit@5": value, "value_hit@5": value}


def _report(int8_dev: float) -> dict:
    def result(dev: float, test: float) -> dict:
        # one question of each half carries the whole difference
        return {"configs": {c: {"dev": _half(dev), "test": _half(test)} for c in bp.CONFIGS},
                "scores": {c: {"dev": [1.0, dev], "test": [1.0, test]} for c in bp.CONFIGS}}

    return {"precisions": ["fp32", "int8"], "command": "python -m bench.quality.bench_precision",
            "date": "2026-12-04 00:00 UTC", "commit": "abc1234", "machine": {"uname": "x", "cpus": 2},
            "sets": {"musique": {"fp32": result(0.70, 0.69), "int8": result(int8_dev, 0.70)},
                     "s10": {"fp32": result(0.9583, 1.0), "int8": result(0.9583, 1.0)}}}


def test_a_development_loss_over_half_a_point_rules_a_precision_out():
    assert bp.losses(_report(0.697)) == {"int8": []}                     # -0.3 point: allowed
    bad = bp.losses(_report(0.6939))["int8"]
    assert bad == [f"musique / {c} (-0.6)" for c in bp.GATED]


def test_only_the_configurations_a_user_runs_are_gated():
    report = _report(0.70)
    report["sets"]["musique"]["int8"]["configs"]["dense"]["dev"] = _half(0.68)   # an ablation row
    assert bp.losses(report) == {"int8": []}
    report["sets"]["musique"]["int8"]["configs"]["hybrid"]["dev"] = _half(0.68)  # route 1
    assert bp.losses(report) == {"int8": ["musique / hybrid (-2.0)"]}


def test_questions_that_changed_are_counted_one_by_one():
    assert bp.changed([1.0, 0.5, 0.5, 0.0], [1.0, 0.0, 1.0, 0.0]) == (1, 1)
    assert bp.changed([0.5, 0.5], [0.5, 0.5]) == (0, 0)


def test_the_table_shows_both_halves_and_the_difference(monkeypatch):
    monkeypatch.setattr(bp, "machine_line", lambda m: "- machine: x")
    report = _report(0.6939)
    report["losses"] = bp.losses(report)
    text = bp.render(report)
    assert "| musique | full | 70.0 / 69.0 | 69.4 / 70.0 | -0.6 / +1.0 | 1 / 0; 0 / 1 |" in text
    assert "| musique | dense (not gated) |" in text
    assert "Verdict for int8: not a default" in text and "musique / full (-0.6)" in text
    assert "musique / dense" not in text.split("Verdict")[1]
