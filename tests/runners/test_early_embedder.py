"""Journals of killed runs are adopted into the embedding cache by the next run."""
from __future__ import annotations

import os
import subprocess
import sys

from runners.early_embedder import adopt_journals
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig
from vdgr_core.embedding_process import EmbedderProcess
from vdgr_core.store.lance_store import connect

HASHING = EmbeddingConfig(kind="hashing", dim=32)


def test_a_killed_runs_journal_is_added_to_the_cache_and_removed(tmp_path):
    index = str(tmp_path / "index")
    config = BuildConfig(corpus=str(tmp_path), index=index, embedding=HASHING)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    staging = os.path.join(index, "_staging")
    killed = os.path.join(staging, f"embedding-journal-{dead.stdout.strip()}.arrows")
    running = os.path.join(staging, f"embedding-journal-{os.getpid()}.arrows")      # a live process's
    for journal, texts in ((killed, ["one", "two", "three"]), (running, ["four"])):
        with EmbedderProcess(HASHING, journal=journal) as child:
            child.embed(texts)
    assert adopt_journals(config.slices.embed) == 3
    assert connect(index).open_table(T.EMBEDDING_CACHE).count_rows() == 3
    assert not os.path.exists(killed) and os.path.exists(running)
    assert adopt_journals(config.slices.embed) == 0
