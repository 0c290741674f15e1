"""`vdgr watch` (streaming micro-batches) and `vdgr update` end to end, with the hashing embedder."""
from __future__ import annotations

import os

from pipelines.watch import run_watch
from runners.cli import main
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig, QueryConfig
from tests.support.corpus import write_corpus
from vdgr_core.query.knowledge_base import KnowledgeBase
from vdgr_core.store.reader import IndexReader

FILES = {
    "net/_meta.yaml": "description: Networking products\n",
    "net/routers/orbit.md": "# Orbit X2 Manual\n\n## Factory reset\n\nHold RESET for 10 seconds.\n",
    "hr/leave.md": "# Leave policy\n\n## Annual leave\n\nEmployees get 25 days of annual leave.\n",
}
PHRASE = "The periscope calibration needs the quasar alignment wrench"
NEW_DOC = f"# Periscope service\n\n## Calibration\n\n{PHRASE}.\n"


def _write_new_doc_once(corpus: str, log: str):
    """on_poll for run_watch: log every poll; write the new document on the first one."""
    def on_poll(result):
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{result.fired_at} {result.build_id}\n")
        path = os.path.join(corpus, "net", "periscope.md")
        if not os.path.exists(path):
            with open(path, "w", encoding="utf-8") as f:
                f.write(NEW_DOC)
    return on_poll


def test_watch_picks_up_a_document_written_between_polls(tmp_path):
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index = str(tmp_path / "index")
    log = str(tmp_path / "polls.log")
    cfg = BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"))

    results = run_watch(cfg, interval_s=1.0, max_polls=3, on_poll=_write_new_doc_once(corpus, log))

    assert len(results) == 3
    assert [r.fired_at for r in results] == sorted(r.fired_at for r in results)
    first, second, third = results
    assert first.build_id is not None                       # no index yet: a full build
    assert second.build_id not in (None, first.build_id)    # the new document, applied
    assert second.summary.startswith("1 added") and "net" in second.summary
    assert third.build_id is None                           # nothing changed since
    with open(log, encoding="utf-8") as f:
        assert len(f.read().splitlines()) == 3               # on_poll ran once per firing

    assert IndexReader(index).manifest.build_id == second.build_id
    kb = KnowledgeBase.open(index, QueryConfig(embedding=EmbeddingConfig(kind="hashing")))
    result = kb.query("periscope calibration quasar alignment wrench")
    assert result.evidence and result.evidence[0].source == "net/periscope.md"
    assert PHRASE in result.evidence[0].text


def test_update_cli_applies_an_edit_and_a_delete(tmp_path, capsys):
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index = str(tmp_path / "index")
    args = [corpus, "--index", index, "--embedding", "hashing", "-q"]
    assert main(["index", *args]) == 0
    before = IndexReader(index).manifest.build_id
    capsys.readouterr()

    assert main(["update", *args]) == 0
    out = capsys.readouterr().out
    assert "index unchanged: nothing to commit" in out
    assert IndexReader(index).manifest.build_id == before

    with open(os.path.join(corpus, "hr", "leave.md"), "w", encoding="utf-8") as f:
        f.write(f"# Leave policy\n\n## Annual leave\n\n{PHRASE}.\n")
    os.remove(os.path.join(corpus, "net", "routers", "orbit.md"))
    assert main(["update", *args]) == 0
    out = capsys.readouterr().out
    assert "0 added, 1 changed, 1 deleted" in out and "committed" in out
    reader = IndexReader(index)
    assert reader.manifest.build_id != before
    sources = {c["source"] for c in reader.arrow(T.CONTENTS).to_pylist()}
    assert sources == {"hr/leave.md"}
    texts = [c["text"] for c in reader.arrow(T.CONTENTS).to_pylist()]
    assert any(PHRASE in t for t in texts)
