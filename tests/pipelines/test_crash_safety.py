"""Crash safety by fault injection: `vdgr update` and `vdgr index` are killed with SIGKILL at each
commit failpoint (vdgr_core/store/failpoints.py). After each kill a reader opens the old index or
the new one, never a mix, and a rerun converges to what a clean full build gives.

The killed runs are subprocesses started together (a few at a time) by one module fixture; each
case then checks its own index and reruns in this process. The corpus is tiny and the embedder
is the hashing one, so the whole module takes well under a minute on 2 cores.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from pipelines.run_build import run_build
from pipelines.run_update import run_update
from vdgr_core.store.gc import collect_garbage
from schemas import tables as T
from tests.support.update_ops import apply_op, hashing_config, snapshot
from vdgr_core.store.failpoints import ENV, POINTS, TABLE_POINT
from vdgr_core.store.location import COMPLETE_MARKER, IndexLocation
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.writer import table_digest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# store.fragments_written: a build's pipeline (in this process) or an update's driver writing fragments
LOCAL_POINTS = ([p for p in POINTS if not p.startswith("store.")] + ["store.fragments_written"]
                + [TABLE_POINT.format(t) for t in T.TABLES])
CASES = ([("update", p) for p in LOCAL_POINTS]
         + [("index", p) for p in LOCAL_POINTS]
         + [("update-object-store", "store.folder_uploaded_without_marker"),
            ("update-object-store", "commit.manifest_before_rename")])


def _case_id(case) -> str:
    return f"{case[0]}@{case[1]}"


def _digests(index: str) -> tuple:
    """Table digests, build id, shard folders, and what each shard holds (read back: a remote
    shard is fetched, which needs its completion marker)."""
    r = IndexReader(index)
    folders = {d: tuple(s.folder for s in shards) for d, shards in r.manifest.tantivy_shards.items()}
    return ({n: table_digest(n, r.arrow(n)) for n in T.TABLES}, r.manifest.build_id, folders,
            {d: r.shard(d).num_docs for d in sorted(r.manifest.tantivy_shards)})


def _killed_run(command: str, corpus: str, index: str, point: str) -> subprocess.CompletedProcess:
    cli = "index" if command == "index" else "update"
    env = {**os.environ, ENV: point}
    return subprocess.run([sys.executable, "-m", "runners.cli", cli, corpus, "--index", index,
                           "--embedding", "hashing", "-q"], cwd=REPO, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("crash"))
    old_corpus, new_corpus = os.path.join(root, "old"), os.path.join(root, "new")
    for corpus in (old_corpus, new_corpus):
        apply_op(corpus, ("write", "net/routers/a.md", 0, [0, 1]))
        apply_op(corpus, ("write", "hr/d.md", 1, [2]))
        apply_op(corpus, ("write", "net/c.md", 2, [3]))
    apply_op(new_corpus, ("write", "net/routers/a.md", 0, [1, 3]))     # changed
    apply_op(new_corpus, ("write", "hr/policies/e.md", 3, [2, 0]))     # added
    apply_op(new_corpus, ("delete", "net/c.md"))                       # deleted
    old, new = os.path.join(root, "old-index"), os.path.join(root, "new-index")
    run_build(hashing_config(old_corpus, old))
    run_build(hashing_config(new_corpus, new))
    old_remote = "file://" + os.path.join(root, "bucket", "old-index")
    run_build(hashing_config(old_corpus, old_remote))
    work = {}
    for case in CASES:
        index = os.path.join(root, "runs", _case_id(case).replace("/", "_"))
        if case[0] == "update-object-store":
            shutil.copytree(old_remote[len("file://"):], index)
            index = "file://" + index
        else:
            shutil.copytree(old, index)
        work[case] = index
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = dict(zip(CASES, pool.map(lambda c: _killed_run(c[0], new_corpus, work[c], c[1]), CASES)))
    return {"new_corpus": new_corpus, "old_index": old, "old": snapshot(old), "new": snapshot(new),
            "old_digests": _digests(old), "new_digests": _digests(new), "work": work, "runs": runs}


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_kill_at_failpoint_leaves_old_or_new_and_rerun_converges(crashed, case, monkeypatch, tmp_path):
    command, point = case
    run, index = crashed["runs"][case], crashed["work"][case]
    assert run.returncode == -signal.SIGKILL, f"the failpoint was not reached:\n{run.stderr[-2000:]}"
    remote = command == "update-object-store"
    if remote:
        monkeypatch.setenv("VDGR_SHARD_CACHE", str(tmp_path / "shard-cache"))
        assert _digests(index) in (crashed["old_digests"], crashed["new_digests"])
    else:
        assert snapshot(index) in (crashed["old"], crashed["new"])
    if point == "commit.manifest_written":
        assert snapshot(index) == crashed["new"]
    if point == "store.folder_uploaded_without_marker":
        loc = IndexLocation(index)
        new = {f for fs in crashed["new_digests"][2].values() for f in fs}
        old = {f for fs in crashed["old_digests"][2].values() for f in fs}
        incomplete = [f for f in new - old if loc.exists(f) and not loc.folder_complete(f)]
        assert incomplete, "the upload left no partial folder"
    config = hashing_config(crashed["new_corpus"], index)
    (run_build if command == "index" else run_update)(config)
    if remote:
        assert _digests(index) == crashed["new_digests"]
        for folder in (f for fs in crashed["new_digests"][2].values() for f in fs):
            assert IndexLocation(index).exists(f"{folder}/{COMPLETE_MARKER}")
    else:
        assert snapshot(index) == crashed["new"]


def _data_files(index: str) -> dict[str, set[str]]:
    """Every table's data files on disk, and those the versions the manifest names use."""
    import lance

    manifest = IndexReader(index).manifest
    on_disk, named = set(), set()
    for name, version in manifest.table_versions.items():
        folder = os.path.join(index, "lance", f"{name}.lance")
        data = os.path.join(folder, "data")
        on_disk |= {f"{name}/{f}" for f in (os.listdir(data) if os.path.isdir(data) else [])}
        ds = lance.dataset(folder, version=version)
        named |= {f"{name}/{f.path}" for frag in ds.get_fragments() for f in frag.data_files()}
    return {"on_disk": on_disk, "named": named}


@pytest.mark.parametrize("command", ["index", "update"])
def test_fragments_of_a_killed_writer_are_named_by_no_manifest_and_gc_removes_them(crashed, command, tmp_path):
    """Killed while writing fragments: no version the manifest names uses them; a rerun equals a
    clean build, and ``vdgr gc`` removes the orphaned data files."""
    import datetime

    index = str(tmp_path / "index")
    shutil.copytree(crashed["old_index"], index)
    run = _killed_run(command, crashed["new_corpus"], index, "store.fragments_written")
    assert run.returncode == -signal.SIGKILL, run.stderr[-2000:]
    orphans = _data_files(index)
    assert orphans["on_disk"] - orphans["named"], "the killed run left no fragment behind"
    assert snapshot(index) == crashed["old"]
    (run_build if command == "index" else run_update)(hashing_config(crashed["new_corpus"], index))
    assert snapshot(index) == crashed["new"]
    collect_garbage(index, keep=datetime.timedelta(0))
    after = _data_files(index)
    assert after["on_disk"] == after["named"]
    assert snapshot(index) == crashed["new"]
