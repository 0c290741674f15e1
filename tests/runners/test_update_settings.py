"""`vdgr update` keeps the build settings recorded in the index; a change must be asked for."""
from __future__ import annotations

import pytest

from pipelines.run_update import run_update
from runners.cli import main
from schemas.config import BuildConfig, ChunkingConfig, EmbeddingConfig
from schemas.errors import SettingsChangeError
from tests.support.corpus import write_corpus
from vdgr_core.safety import content_rules
from vdgr_core.store.reader import IndexReader

FILES = {
    "net/routers/orbit.md": "# Orbit X2 Manual\n\n## Factory reset\n\nHold RESET for 10 seconds.\n",
    "hr/leave.md": "# Leave policy\n\n## Annual leave\n\nEmployees get 25 days of annual leave.\n",
}


@pytest.fixture()
def hashing_index(tmp_path):
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index = str(tmp_path / "index")
    assert main(["index", corpus, "--index", index, "--embedding", "hashing", "-q"]) == 0
    return corpus, index


def _add_section(corpus: str) -> None:
    with open(f"{corpus}/hr/leave.md", "a", encoding="utf-8") as f:
        f.write("\n## Sick leave\n\nReport sick leave within one day.\n")


def test_update_without_settings_flags_uses_the_recorded_settings(hashing_index, capsys):
    corpus, index = hashing_index
    before = IndexReader(index).manifest
    _add_section(corpus)
    assert main(["update", corpus, "--index", index, "-q"]) == 0     # no --embedding given
    after = IndexReader(index).manifest
    assert after.embedding_model == before.embedding_model == "hashing:v1:384"
    assert after.config == before.config
    out = capsys.readouterr().out
    assert "1 changed" in out and "changed domains: hr" in out     # a document-level update


def test_update_with_other_settings_needs_the_explicit_flag(hashing_index, capsys):
    corpus, index = hashing_index
    before = IndexReader(index).manifest
    _add_section(corpus)
    assert main(["update", corpus, "--index", index, "--embedding", "minilm", "-q"]) == 2
    err = capsys.readouterr().err
    assert "embedding.kind: 'hashing' -> 'minilm'" in err and "--new-settings" in err
    assert IndexReader(index).manifest.build_id == before.build_id        # nothing written
    # an explicit change of settings is applied (every domain rebuilt with them)
    assert main(["update", corpus, "--index", index, "--chunk-tokens", "64", "--new-settings", "-q"]) == 0
    after = IndexReader(index).manifest
    assert after.config["chunking"] == {"max_tokens": 64, "overlap_tokens": 4}
    assert after.config["embedding"]["kind"] == "hashing"                 # not given: recorded


def test_run_update_refuses_other_settings_unless_asked(hashing_index):
    corpus, index = hashing_index
    recorded = IndexReader(index).manifest.config
    same = BuildConfig.from_settings(recorded, corpus=corpus, index=index)
    assert same.settings(content_rules()) == recorded
    other = BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"),
                        chunking=ChunkingConfig(max_tokens=64, overlap_tokens=4))
    with pytest.raises(SettingsChangeError, match="chunking.max_tokens: 200 -> 64"):
        run_update(other)
    report = run_update(other, settings_change=True)
    assert report.plan.config_changed and set(report.plan.affected_domains) == {"hr", "net"}


def test_an_index_recorded_before_title_entities_keeps_updating_without_them(hashing_index):
    corpus, index = hashing_index
    recorded = dict(IndexReader(index).manifest.config)
    assert recorded["title_entities"] is True                 # a new build records the default
    del recorded["title_entities"]                            # as recorded by an older version
    assert BuildConfig.from_settings(recorded, corpus=corpus, index=index).title_entities is False


def test_title_entities_is_a_recorded_setting(tmp_path, capsys):
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index = str(tmp_path / "index")
    assert main(["index", corpus, "--index", index, "--embedding", "hashing", "--no-title-entities", "-q"]) == 0
    _add_section(corpus)
    assert main(["update", corpus, "--index", index, "-q"]) == 0             # the recorded setting
    assert IndexReader(index).manifest.config["title_entities"] is False
    capsys.readouterr()
    assert main(["update", corpus, "--index", index, "--title-entities", "-q"]) == 2
    assert "title_entities: False -> True" in capsys.readouterr().err
    assert main(["update", corpus, "--index", index, "--title-entities", "--new-settings", "-q"]) == 0
    assert IndexReader(index).manifest.config["title_entities"] is True
