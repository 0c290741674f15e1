"""`vdgr index`, `update` and `query` on a share-nothing cluster: one and two Beam worker pools in
separate processes (own cwd, HOME, TMPDIR, and a private /tmp where the kernel allows) that
share nothing with the driver but a local S3 (moto's server), found by every component through
the standard AWS environment variables. The index they build equals the in-process build of
the same corpus from a local folder; a worker pool killed mid-build fails the job, leaves the
committed index alone, and a rerun completes from the embedding cache."""
from __future__ import annotations

import os
import re
import threading
import time
from types import SimpleNamespace

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("boto3")

from runners.cli import main  # noqa: E402
from schemas import tables as T  # noqa: E402
from tests.support.cluster import (  # noqa: E402
    JobService, PoolFront, S3Endpoint, WorkerPool, external_flags, object_exists, unshare_works, upload_folder)
from tests.support.corpus import SMALL, write_corpus  # noqa: E402
from vdgr_core.store.reader import IndexReader  # noqa: E402
from vdgr_core.store.writer import table_digest  # noqa: E402

BUCKET = "vdgr-cluster"
FILES = SMALL
HASHING = ["--embedding", "hashing", "-q"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """S3 on 127.0.0.1, two worker pools, a front that hands workers to them in turn and a job
    service that gives a job two SDK workers (``--job_endpoint=embed`` gives it one)."""
    root = tmp_path_factory.mktemp("cluster")
    private_tmp = unshare_works()
    with S3Endpoint() as s3:
        s3.client().create_bucket(Bucket=BUCKET)
        pools = [WorkerPool(str(root / f"pool{i}"), s3.env(), private_tmp=private_tmp).start() for i in range(2)]
        os.makedirs(root / "job-service")
        try:
            with PoolFront([p.address for p in pools]) as front, JobService(str(root / "job-service")) as jobs:
                yield SimpleNamespace(s3=s3, pools=pools, front=front, jobs=jobs,
                                      two_workers=external_flags(front.address, 2, jobs.address))
        finally:
            for p in pools:
                p.kill()


@pytest.fixture
def driver_env(cluster, monkeypatch, tmp_path):
    """The driver (this process) finds S3 through the same variables; its shard cache is its own."""
    s3 = cluster.s3
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("VDGR_SHARD_CACHE", str(tmp_path / "shard-cache"))
    return s3


def _digests(index: str) -> tuple[dict[str, str], str]:
    reader = IndexReader(index)
    return {n: table_digest(n, reader.arrow(n)) for n in T.TABLES}, reader.manifest.build_id


def _local_build(corpus: str, index: str) -> tuple[dict[str, str], str]:
    assert main(["index", corpus, *HASHING, "--index", index]) == 0      # in-process FnApiRunner
    return _digests(index)


def _keys(client, prefix: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def test_a_build_and_an_update_on_two_worker_pools_equal_the_in_process_build(cluster, driver_env, tmp_path,
                                                                              capsys):
    s3, pools, front = cluster.s3, cluster.pools, cluster.front
    client = s3.client()
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    upload_folder(client, BUCKET, "life/corpus", corpus)
    index = f"s3://{BUCKET}/life/index"
    flags = cluster.two_workers

    assert main(["index", f"s3://{BUCKET}/life/corpus", "--index", index, *HASHING, *flags]) == 0
    assert _digests(index) == _local_build(corpus, str(tmp_path / "local"))
    assert all(front.started[p.address] for p in pools)          # both pools ran SDK workers
    assert not _keys(client, "life/index/_staging/")              # the staging area is gone

    # an edit, a delete, an add and a rename, in the bucket and in the local copy
    changes = {"hr/leave.md": FILES["hr/leave.md"] + "\n## Sick leave\n\nReport sick leave within one day.\n",
               "hr/travel.md": "# Travel\n\n## Trains\n\nBook second class for trips under four hours.\n",
               "net/routers/v1/orbit-x2.md": FILES["net/routers/v1/orbit.md"]}
    for rel, text in changes.items():
        write_corpus(corpus, {rel: text})
        client.put_object(Bucket=BUCKET, Key=f"life/corpus/{rel}", Body=text.encode())
    for rel in ("net/switches/nova.md", "net/routers/v1/orbit.md"):
        os.remove(os.path.join(corpus, rel))
        client.delete_object(Bucket=BUCKET, Key=f"life/corpus/{rel}")
    capsys.readouterr()
    # every changed document goes through the workers, none through the driver
    assert main(["update", f"s3://{BUCKET}/life/corpus", "--index", index, *HASHING,
                 "--in-driver-max-documents=0", *flags]) == 0
    assert _digests(index) == _local_build(corpus, str(tmp_path / "fresh"))

    # the query module reads the index from S3, its BM25 shards through the local shard cache
    capsys.readouterr()
    assert main(["query", "How long do I hold RESET on the Orbit X2?", "--index", index,
                 "--embedding", "hashing", "--json"]) == 0
    out = capsys.readouterr().out
    assert "10 seconds" in out and "orbit-x2.md" in out
    assert os.listdir(tmp_path / "shard-cache")


def _named_data_files(index: str, prefix: str) -> set[str]:
    """The keys of the data files the versions the manifest names use."""
    from vdgr_core.store.fragments import lance_module, table_uri
    from vdgr_core.store.lance_store import storage_options

    manifest = IndexReader(index).manifest
    out = set()
    for name, version in manifest.table_versions.items():
        ds = lance_module().dataset(table_uri(index, name), version=version, storage_options=storage_options(index))
        out |= {f"{prefix}/lance/{name}.lance/data/{f.path}" for frag in ds.get_fragments() for f in frag.data_files()}
    return out


# a worker stopped for good (then its pool killed) while it uploads a BM25 shard's files, or right
# after it wrote Lance fragments of a table that no version names yet
@pytest.mark.parametrize("point", ["store.folder_uploaded_without_marker", "store.fragments_written"])
def test_a_worker_pool_killed_mid_build_fails_the_job_and_a_rerun_completes(cluster, driver_env, tmp_path,
                                                                           capsys, point):
    s3, pools = cluster.s3, cluster.pools
    client = s3.client()
    files = {k: v for k, v in FILES.items() if k.startswith("net/")}
    corpus = write_corpus(str(tmp_path / "corpus"), files)
    upload_folder(client, BUCKET, f"fault-{point}/corpus", corpus)
    index = f"s3://{BUCKET}/fault-{point}/index"
    source = [f"s3://{BUCKET}/fault-{point}/corpus", "--index", index, *HASHING]
    # the command as it stands: the job service embedded in the driver, one pool
    assert main(["index", *source, *external_flags(pools[0].address)]) == 0
    committed, manifests = _digests(index), _keys(client, f"fault-{point}/index/manifest")
    assert committed == _local_build(corpus, str(tmp_path / "local-before"))     # one pool == in process

    added = {"net/routers/v1/lights.md": "# Status lights\n\n## Amber\n\nAmber means the radio restarts.\n"}
    write_corpus(corpus, added)
    client.put_object(Bucket=BUCKET, Key=f"fault-{point}/corpus/net/routers/v1/lights.md",
                      Body=added["net/routers/v1/lights.md"].encode())

    # Two pools whose SDK workers stop for good at ``point``, after writing a marker object; the
    # first to get there is killed whole (pool and workers: SIGKILL to its process group), as a
    # lost host would be.
    root = tmp_path / "faulty"
    faulty = [WorkerPool(str(root / f"pool{i}"), {
        **s3.env(), "VDGR_FAILPOINT": point,
        "VDGR_FAILPOINT_MARKER": f"s3://{BUCKET}/fault-{point}/markers/pool{i}"}).start() for i in range(2)]
    outcome: dict[str, object] = {}

    def build():
        try:
            outcome["rc"] = main(["index", *source, *external_flags(front_f.address, 2, cluster.jobs.address)])
        except BaseException as e:      # noqa: BLE001 - the test asserts what it was
            outcome["error"] = e

    try:
        with PoolFront([p.address for p in faulty]) as front_f:
            capsys.readouterr()
            t = threading.Thread(target=build, daemon=True)
            t.start()
            deadline = time.monotonic() + 360
            killed: list[int] = []
            # a pool is killed as soon as its marker exists (the corpus has one domain, so one
            # shard and one worker at the point; were there two, both pools would go)
            while t.is_alive() and time.monotonic() < deadline:
                for i in range(2):
                    if i not in killed and object_exists(client, BUCKET, f"fault-{point}/markers/pool{i}"):
                        faulty[i].kill()
                        killed.append(i)
                time.sleep(0.05)
            assert killed, f"no worker reached the failpoint: {outcome}"
            assert not t.is_alive(), "the job did not end after a worker pool was killed"
    finally:
        for p in faulty:
            p.kill()
    err = capsys.readouterr().err
    assert outcome == {"rc": 2}, outcome          # a typed error, said clearly, no traceback
    assert re.search(r"vdgr index: error: Pipeline \S+ failed in state FAILED.*nothing was committed", err), err
    # no manifest names the partial build, nor any fragment it wrote
    assert _digests(index) == committed
    assert _keys(client, f"fault-{point}/index/manifest") == manifests
    data = {k for k in _keys(client, f"fault-{point}/index/lance/") if "/data/" in k}
    named = _named_data_files(index, f"fault-{point}/index")
    assert named <= data
    if point == "store.fragments_written":
        assert data - named, "the killed worker left no fragment"

    capsys.readouterr()
    assert main(["index", *source, *cluster.two_workers]) == 0
    out = capsys.readouterr().out
    cached = int(re.search(r"embeddings\s+\S+ computed, (\S+) from cache", out).group(1).replace(",", ""))
    assert cached > 0
    assert _digests(index) == _local_build(corpus, str(tmp_path / "local"))
