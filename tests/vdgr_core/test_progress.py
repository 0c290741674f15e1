"""Build progress: counts, rate, ETA and the line a user reads."""
from __future__ import annotations

from vdgr_core.progress import BuildProgress, plural, render, reporting


class _Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_rate_and_eta_from_the_counts():
    clock = _Clock()
    p = BuildProgress(clock)
    p.start(documents_total=10)
    assert render(p.snapshot()) == "parsed 0 of 10 documents"
    p.parsed(5)
    p.queued(100)
    p.embedded(20)                     # the first answer: the rate counts from here
    clock.t += 4
    p.embedded(40)
    s = p.snapshot()
    assert s.rate == 60 / 4
    # 5 of 10 documents brought 100 texts: 200 expected, 140 left at 15 texts/s
    assert abs(s.eta_s - 140 / 15) < 1e-9
    assert render(s) == "parsed 5 of 10 documents; embedded 60 of 100 texts known so far (15.0 texts/s, ETA 9 s)"
    p.parsed(5)
    assert abs(p.snapshot().eta_s - 40 / 15) < 1e-9          # every document parsed: the queue is all


def test_counts_are_pluralised():
    assert plural(1, "domain") == "1 domain" and plural(2, "domain") == "2 domains"
    assert plural(1_234, "text") == "1,234 texts" and plural(0, "file") == "0 files"


def test_reporting_restarts_the_counts_and_stops_its_thread():
    import threading

    p = BuildProgress()
    p.parsed(3)
    lines = []
    with reporting(7, lines.append, interval_s=3600, progress=p) as got:
        assert got is p and p.snapshot().documents_parsed == 0 and p.snapshot().documents_total == 7
    assert not any(t.name == "vdgr-progress" for t in threading.enumerate())


def test_a_build_counts_every_document_and_embedded_text(tmp_path, monkeypatch):
    import vdgr_core.indexing.model_home as embed_module
    from pipelines.run_build import run_build
    from schemas.config import BuildConfig, EmbeddingConfig
    from tests.support.corpus import write_corpus
    from vdgr_core.progress import PROGRESS

    monkeypatch.setattr(embed_module, "_MEMO", embed_module.VectorMemo())   # as in a new process
    corpus = write_corpus(str(tmp_path / "corpus"))
    lines = []
    report = run_build(BuildConfig(corpus=corpus, index=str(tmp_path / "index"),
                                   embedding=EmbeddingConfig(kind="hashing")), progress=lines.append)
    s = PROGRESS.snapshot()
    assert s.documents_parsed == s.documents_total > 0          # dead letters were read too
    assert s.texts_embedded == s.texts_queued >= report.embeddings_computed > 0
    assert any(line.startswith("found ") for line in lines)


def test_an_update_counts_its_arriving_documents_and_the_texts_it_embeds(tmp_path, monkeypatch):
    import os

    import vdgr_core.indexing.model_home as embed_module
    from pipelines.run_build import run_build
    from pipelines.run_update import run_update
    from schemas.config import BuildConfig, EmbeddingConfig
    from tests.support.corpus import write_corpus
    from vdgr_core.progress import PROGRESS

    monkeypatch.setattr(embed_module, "_MEMO", embed_module.VectorMemo())   # as in a new process
    corpus = write_corpus(str(tmp_path / "corpus"))
    cfg = BuildConfig(corpus=corpus, index=str(tmp_path / "index"), embedding=EmbeddingConfig(kind="hashing"))
    run_build(cfg)
    path = next(os.path.join(d, f) for d, _, fs in sorted(os.walk(corpus)) for f in sorted(fs) if f.endswith(".md"))
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n\nA paragraph added for the progress test about the backup battery.\n")
    report = run_update(cfg)
    s = PROGRESS.snapshot()
    assert s.documents_total == s.documents_parsed == 1                     # the changed document
    assert s.texts_embedded == s.texts_queued == report.build.embeddings_computed > 0
