"""The driver's part of a build (pipelines/run_build.py): texts sent to the embedder early."""
from concurrent.futures import Future

from schemas.config import BuildConfig, EmbeddingConfig
from tests.support.corpus import write_corpus
from vdgr_core.embedding import make_embedder

HASHING = EmbeddingConfig(kind="hashing", dim=32)


class _AsyncHashing:
    """submit() like EmbedderProcess, answered at once; records what it was sent, and when."""

    def __init__(self, events: list):
        self.inner = make_embedder(HASHING)
        self.events = events

    def submit(self, texts):
        self.events.append(("submit", list(texts)))
        fut: Future = Future()
        fut.set_result(self.inner.embed(texts))
        return fut


def test_the_first_documents_texts_reach_the_embedder_before_the_pipeline_is_built(tmp_path, monkeypatch):
    import pipelines.run_build as run_build_module
    import vdgr_core.indexing.model_home as embed_module
    from apache_beam.io.filesystems import FileSystems
    from pipelines.build import chunk_texts
    from schemas.records import DeadLetter
    from vdgr_core.indexing.model_home import provided_embedder
    from vdgr_core.corpus import scan_corpus
    from vdgr_core.embedding import embedder_identity
    from vdgr_core.indexing.document import load_document

    corpus = write_corpus(str(tmp_path / "corpus"))
    cfg = BuildConfig(corpus=corpus, index=str(tmp_path / "index"), embedding=HASHING)
    events: list = []
    real_build_pipeline = run_build_module.build_pipeline

    def recorded(*args, **kwargs):
        events.append(("pipeline", None))
        return real_build_pipeline(*args, **kwargs)

    monkeypatch.setattr(run_build_module, "build_pipeline", recorded)
    monkeypatch.setattr(run_build_module, "FIRST_TEXTS", 5)
    monkeypatch.setattr(embed_module, "_MEMO", embed_module.VectorMemo())   # as in a new process
    with provided_embedder(HASHING, _AsyncHashing(events)):
        report = run_build_module.run_build(cfg)

    early = [t for kind, texts in events[:events.index(("pipeline", None))] if kind == "submit" for t in texts]
    # the chunk texts of the scan's first documents, until at least 5
    model_id = embedder_identity(HASHING)[0]
    want: list = []
    for task in scan_corpus(corpus).tasks:
        if len(want) >= 5:
            break
        doc = load_document(task, cfg.slices.parse, FileSystems.open, FileSystems.join)
        if isinstance(doc, DeadLetter):
            continue
        want += [text for _key, text in chunk_texts(doc, model_id)]
    assert early and sorted(early) == sorted(dict.fromkeys(want))
    sent = [t for kind, texts in events if kind == "submit" for t in texts]
    assert len(sent) == len(set(sent)) == report.embeddings_computed     # none embedded twice


def test_nothing_is_parsed_early_without_an_embedder_that_answers_later(tmp_path, monkeypatch):
    import pipelines.run_build as run_build_module
    from vdgr_core.corpus import scan_corpus

    corpus = write_corpus(str(tmp_path / "corpus"))
    cfg = BuildConfig(corpus=corpus, index=str(tmp_path / "index"), embedding=HASHING)
    scan = scan_corpus(corpus)
    parsed = []
    monkeypatch.setattr(run_build_module, "load_document", lambda *a: parsed.append(a))
    assert run_build_module.send_first_texts(cfg.slices.parse, cfg.slices.embed, scan, "model", 5) == 0 and parsed == []
