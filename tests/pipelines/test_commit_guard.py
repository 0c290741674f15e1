"""Builds and updates hand their held index lock to the one commit (vdgr_core/store/writer.py): a
manifest that another writer committed meanwhile (bypassing the lock) makes the commit fail
instead of being replaced."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import vdgr_core.store.writer as writer_module
from pipelines.run_build import run_build
from pipelines.run_update import run_update
from schemas.config import BuildConfig, EmbeddingConfig
from schemas.errors import ConcurrentCommitError
from tests.support.corpus import write_corpus
from vdgr_core.store.manifest import read_manifest, write_manifest


def _config(corpus, index) -> BuildConfig:
    return BuildConfig(corpus=str(corpus), index=str(index), embedding=EmbeddingConfig(kind="hashing"))


def _bypassing_writer(monkeypatch, module, name: str, index: str) -> None:
    """Right before the manifest is written, another writer commits one without the lock."""
    original = getattr(module, name)

    def step(*args, **kwargs):
        out = original(*args, **kwargs)
        m = read_manifest(index)
        write_manifest(index, dataclasses.replace(m, build_id="bypass"))
        return out

    monkeypatch.setattr(module, name, step)


@pytest.fixture()
def built(tmp_path):
    corpus = write_corpus(str(tmp_path / "corpus"))
    index = str(tmp_path / "index")
    run_build(_config(corpus, index))
    return corpus, index


def test_a_build_fails_when_the_manifest_moved_under_its_lock(built, monkeypatch):
    corpus, index = built
    before = read_manifest(index).generation
    _bypassing_writer(monkeypatch, writer_module, "_append_cache", index)
    with pytest.raises(ConcurrentCommitError, match="changed during this commit"):
        run_build(_config(corpus, index))
    m = read_manifest(index)
    assert (m.build_id, m.generation) == ("bypass", before + 1)      # not replaced


def test_an_update_fails_when_the_manifest_moved_under_its_lock(built, monkeypatch):
    corpus, index = built
    before = read_manifest(index).generation
    doc = Path(corpus) / "net" / "routers" / "v2" / "orbit.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\n\nA new paragraph about the reset button.\n",
                   encoding="utf-8")
    _bypassing_writer(monkeypatch, writer_module, "_append_cache", index)
    with pytest.raises(ConcurrentCommitError, match="changed during this commit"):
        run_update(_config(corpus, index))
    m = read_manifest(index)
    assert (m.build_id, m.generation) == ("bypass", before + 1)
