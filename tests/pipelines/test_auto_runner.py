"""The build's own runner choice: worker processes for a large build with no local model."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from pipelines.options import AUTO_WORKERS_MIN_DOCUMENTS, auto_runner_args, names_runner
from schemas import tables as T
from tests.support.corpus import SMALL, write_corpus
from vdgr_core.progress import PROGRESS_DIR_ENV, BuildProgress, counting_workers, worker_counts
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.writer import table_digest

MP = ["--runner=FnApiRunner", "--direct_running_mode=multi_processing", "--direct_num_workers=2"]


def test_a_large_build_with_no_local_model_runs_on_a_worker_per_core():
    big = AUTO_WORKERS_MIN_DOCUMENTS
    assert auto_runner_args([], documents=big, local_model=False, cores=2) == MP
    # a local model has its own process and threads; a small build starts no workers
    assert auto_runner_args([], documents=big, local_model=True, cores=2) == ["--runner=FnApiRunner"]
    assert auto_runner_args([], documents=big - 1, local_model=False, cores=2) == ["--runner=FnApiRunner"]
    assert auto_runner_args([], documents=big, local_model=False, cores=1) == ["--runner=FnApiRunner"]
    # an s3:// corpus or index stays in process (one shared S3 client)
    assert auto_runner_args([], documents=big, local_model=False, remote=True, cores=2) == ["--runner=FnApiRunner"]
    # whatever the user named is kept as it is
    for given in (["--runner=PortableRunner"], ["--direct_running_mode=in_memory"], ["--direct_num_workers=4"]):
        assert names_runner(given)
        assert auto_runner_args(given, documents=big, local_model=False, cores=2) == given
    assert auto_runner_args(["--temp_location=/x"], documents=big, local_model=False, cores=2) == ["--temp_location=/x", *MP]


def _digests(index: str) -> dict[str, str]:
    reader = IndexReader(index)
    return {n: table_digest(n, reader.arrow(n)) for n in T.TABLES}


def test_the_chosen_worker_processes_build_the_same_index(tmp_path, monkeypatch, capfd):
    """With the threshold lowered, a hashing build of a small corpus takes the worker path
    (the usable cores are two: the CI machine's and this one's; more gives more workers)."""
    from runners.cli import main

    corpus = write_corpus(str(tmp_path / "corpus"), SMALL)
    common = [corpus, "--embedding", "hashing"]
    assert main(["index", *common, "-q", "--index", str(tmp_path / "direct"), "--preset", "direct"]) == 0
    capfd.readouterr()
    monkeypatch.setattr("pipelines.options.AUTO_WORKERS_MIN_DOCUMENTS", 1)
    monkeypatch.setattr("pipelines.options.usable_cores", lambda: 2)
    assert main(["index", *common, "--index", str(tmp_path / "auto")]) == 0
    err = capfd.readouterr().err
    assert re.search(r"\[vdgr\] \d documents? and no local model: running on 2 worker processes", err)
    # the workers' start-up chatter (harness INFO lines, library notices) does not reach the user
    assert not re.search(r"^(INFO|DEBUG):|apitools|semi_persistent|Worker: severity", err, re.M), err
    assert _digests(str(tmp_path / "auto")) == _digests(str(tmp_path / "direct"))
    assert IndexReader(str(tmp_path / "auto")).manifest.build_id == IndexReader(str(tmp_path / "direct")).manifest.build_id
    assert os.environ.get(PROGRESS_DIR_ENV) is None        # the driver's setting is gone after the run


WORKER = """
import sys
from vdgr_core import progress
progress.PROGRESS.parsed(int(sys.argv[1]))
progress.PROGRESS.queued(10)
progress.PROGRESS.embedded(int(sys.argv[2]))
progress._PUBLISHER.write()
"""


def test_worker_processes_counts_reach_the_drivers_progress_lines(tmp_path):
    progress = BuildProgress()
    progress.start(7)
    progress.parsed(1)                     # the driver's own count is not published to itself
    with counting_workers(progress) as folder:
        env = {**os.environ, "PYTHONPATH": os.getcwd()}
        for parsed, embedded in ((2, 4), (3, 6)):
            subprocess.run([sys.executable, "-c", WORKER, str(parsed), str(embedded)], env=env, check=True)
        assert sorted(json.loads(p.read_text()) for p in Path(folder).glob("*.json")) == [[2, 10, 4], [3, 10, 6]]
        assert worker_counts(folder) == (5, 20, 10)
        snap = progress.snapshot()
        assert (snap.documents_parsed, snap.texts_queued, snap.texts_embedded) == (6, 20, 10)
    assert not os.path.exists(folder)
    assert progress.snapshot().documents_parsed == 1


def test_index_segments_built_by_worker_processes_equal_the_ones_built_here(tmp_path):
    """With every index due (thresholds lowered), the commit's index segments are built by the
    runner's worker processes in a second pipeline (pipelines/index_segments.py) or, in process,
    here; the driver trains the IVF centroids and names the segments. Both give the same rows
    and build id, the same indexes, every row indexed."""
    from pipelines.run_build import run_build
    from schemas.config import BuildConfig, EmbeddingConfig, StoreConfig
    from vdgr_core.store.table_indexes import SCALAR_INDEXES, VECTOR_INDEX

    corpus = write_corpus(str(tmp_path / "corpus"), SMALL)
    store = StoreConfig(scalar_index_min_rows=1, vector_index_min_rows=4, vector_rows_per_partition=64)
    built = {}
    for way, args in (("here", ["--runner=FnApiRunner"]), ("workers", MP)):
        index = str(tmp_path / way)
        report = run_build(BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"),
                                       store=store), args)
        reader = IndexReader(index)
        indexes = {n: sorted(i.name for i in reader.table(n).list_indices()) for n in T.TABLES}
        built[way] = (_digests(index), report.manifest.build_id, indexes, report.manifest.vector_indexes)
    assert built["here"] == built["workers"]
    digests, _, indexes, vectors = built["here"]
    assert indexes[T.CONTENTS] == sorted([f"{c}_idx" for c in SCALAR_INDEXES[T.CONTENTS]] + [VECTOR_INDEX])
    assert vectors[T.CONTENTS]["type"] == "IVF_SQ" and vectors[T.CONTENTS]["unindexed_rows"] == 0
