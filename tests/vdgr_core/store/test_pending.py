"""PendingPublish: a commit's layout files are made durable together, then put in place."""
import os
import sys

import pytest

from vdgr_core.store import location
from vdgr_core.store.location import SYNCFS_MIN_FILES
from vdgr_core.store.pending import PendingPublish


def _write(path: str, data: bytes = b"x") -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _folder_publisher(tmp: str, final: str, order: list):
    def publish():
        order.append(("folder", final))
        os.replace(tmp, final)
    return publish


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux's")
def test_files_of_many_folders_take_one_syncfs_and_appear_only_at_the_end(tmp_path, durability_calls):
    order: list = []
    finals = []
    with PendingPublish() as pending:
        for domain in ("a", "b", "c"):
            for i in range(SYNCFS_MIN_FILES // 2):
                final = str(tmp_path / "vectors" / domain / f"block{i}.npy")
                pending.add_file(_write(final + ".tmp"), final)
                finals.append(final)
            tmp = str(tmp_path / "layout" / domain / ".building")
            files = [_write(os.path.join(tmp, "meta.json"))]
            pending.add_folder(tmp, files, _folder_publisher(tmp, str(tmp_path / "layout" / domain / "L"), order))
            assert not any(os.path.exists(f) for f in finals) and order == []
        assert len(pending) == 3 * (SYNCFS_MIN_FILES // 2 + 1)
    assert durability_calls["syncfs"] == 1
    assert durability_calls["fsync"] == 3                     # the blocks' folders, after the renames
    assert all(os.path.exists(f) for f in finals)
    assert [d for _, d in order] == [str(tmp_path / "layout" / d / "L") for d in ("a", "b", "c")]
    assert all(os.path.exists(tmp_path / "layout" / d / "L" / "meta.json") for d in ("a", "b", "c"))


def test_a_few_files_take_an_fsync_each_and_blocks_precede_the_folder_naming_them(tmp_path, durability_calls):
    final = str(tmp_path / "v" / "block.npy")
    tmp = str(tmp_path / "layout" / ".building")
    seen = []

    def publish():
        seen.append(os.path.exists(final))           # the block is in place when its layout appears
        os.replace(tmp, str(tmp_path / "layout" / "L"))

    with PendingPublish() as pending:
        pending.add_folder(tmp, [_write(os.path.join(tmp, "meta.json"))], publish)
        pending.add_file(_write(final + ".tmp"), final)
    assert seen == [True]
    # two files, their two folders before the renames, the block's folder after them
    assert durability_calls == {"syncfs": 0, "fsync": 5}


def test_an_error_in_the_block_puts_nothing_in_place_and_leaves_no_temporary_file(tmp_path):
    final = str(tmp_path / "v" / "block.npy")
    tmp = str(tmp_path / "layout" / ".building")
    published = []
    with pytest.raises(RuntimeError):
        with PendingPublish() as pending:
            pending.add_file(_write(final + ".tmp"), final)
            pending.add_folder(tmp, [_write(os.path.join(tmp, "meta.json"))], lambda: published.append(1))
            raise RuntimeError("assembling the next domain failed")
    assert not os.path.exists(final) and not os.path.exists(final + ".tmp")
    assert not os.path.exists(tmp) and published == []


def test_layouts_written_together_are_made_durable_with_one_syncfs(tmp_path, durability_calls, monkeypatch):
    """Three domains' layouts and blocks (over SYNCFS_MIN_FILES files) that one process writes
    from the tables (an update's driver) become durable in one system call, not one folder at a
    time; a build's workers write one domain each, each with its own."""
    from pipelines.run_build import run_build
    from schemas.config import BuildConfig, EmbeddingConfig
    from tests.support.corpus import write_corpus
    from vdgr_core.store import layout_build
    from vdgr_core.store.reader import IndexReader

    if not sys.platform.startswith("linux"):
        pytest.skip("syncfs is Linux's")
    monkeypatch.setattr(location, "SYNCFS_MIN_FILES", 8)       # a domain here writes fewer than 64
    corpus = write_corpus(str(tmp_path / "corpus"))
    before = dict(durability_calls)
    run_build(BuildConfig(corpus=corpus, index=str(tmp_path / "index"), embedding=EmbeddingConfig(kind="hashing")))
    assert durability_calls["syncfs"] - before["syncfs"] == 3           # one a domain
    reader = IndexReader(str(tmp_path / "index"))
    tables = {n: reader.table(n) for n in ("contents", "directories", "entities", "edges")}
    before = dict(durability_calls)
    layout_build.write_layouts(tables, str(tmp_path / "again"), sorted(reader.manifest.layouts))
    during = {k: durability_calls[k] - before[k] for k in before}
    layouts = os.listdir(tmp_path / "again" / "layout")
    assert sorted(layouts) == ["hr", "net", "specs"]
    assert not [n for d in layouts for n in os.listdir(tmp_path / "again" / "layout" / d) if n.startswith(".")]
    # one syncfs for every file, then the blocks' folders (a domain's content and directory
    # blocks share one) after their renames
    assert during == {"syncfs": 1, "fsync": 3}
