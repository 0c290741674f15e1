"""A corpus with names that are not UTF-8, symlinks out of the root, a symlink loop and a FIFO
builds to completion: each refused entry is a typed dead letter, and an update equals a rebuild."""
from __future__ import annotations

import os

from pipelines.run_build import run_build
from pipelines.run_update import run_update
from schemas import tables as T
from tests.support.update_ops import hashing_config, snapshot
from tests.support.corpus import write_corpus
from vdgr_core.store.reader import IndexReader


def _hostile_corpus(root: str) -> str:
    corpus = write_corpus(os.path.join(root, "corpus"), {
        "net/a/x.md": "# Router\n\nHold RESET for 10 seconds.\n",
        "hr/leave.md": "# Leave\n\nEmployees get 25 days of annual leave.\n",
    })
    outside = write_corpus(os.path.join(root, "outside"), {"secret.md": "# Secret\n\nZETA-77 service key.\n"})
    os.symlink(os.path.join(outside, "secret.md"), os.path.join(corpus, "net", "a", "leak.md"))
    os.symlink("..", os.path.join(corpus, "net", "a", "loop"))
    os.mkfifo(os.path.join(corpus, "net", "a", "pipe.md"))
    with open(os.fsencode(corpus) + b"/net/a/bad\xffname.md", "w") as f:
        f.write("# Bad name\n\nnever indexed\n")
    return corpus


def test_build_completes_and_refused_entries_are_dead_letters(tmp_path):
    corpus = _hostile_corpus(str(tmp_path))
    index = str(tmp_path / "index")
    report = run_build(hashing_config(corpus, index))
    reader = IndexReader(index)
    dead = {r["path"]: r["reason"] for r in reader.arrow(T.DEAD_LETTERS).to_pylist()}
    assert dead == {"net/a/leak.md": "outside_root", "net/a/loop": "symlink_loop",
                    "net/a/pipe.md": "not_regular_file", "net/a/bad\\xffname.md": "invalid_name"}
    assert report.dead_letters == 4
    sources = set(reader.arrow(T.CONTENTS, ["source"]).column("source").to_pylist())
    assert sources == {"net/a/x.md", "hr/leave.md"}
    texts = " ".join(reader.arrow(T.CONTENTS, ["text"]).column("text").to_pylist())
    assert "ZETA-77" not in texts


def test_update_of_a_refused_entry_equals_a_rebuild(tmp_path):
    corpus = _hostile_corpus(str(tmp_path))
    live = str(tmp_path / "live")
    run_build(hashing_config(corpus, live))
    link = os.path.join(corpus, "net", "a", "leak.md")
    os.unlink(link)                               # the symlink becomes a real document
    with open(link, "w", encoding="utf-8") as f:
        f.write("# Leak\n\nNow a real file inside the corpus.\n")
    os.unlink(os.path.join(corpus, "net", "a", "loop"))
    report = run_update(hashing_config(corpus, live))
    assert set(report.plan.changed) == {"net/a/leak.md"} and set(report.plan.deleted) == {"net/a/loop"}
    fresh = str(tmp_path / "fresh")
    run_build(hashing_config(corpus, fresh))
    assert snapshot(live) == snapshot(fresh)
