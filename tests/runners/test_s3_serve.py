"""`vdgr serve` on an index in S3 (moto's server on 127.0.0.1, found through the standard AWS
environment variables): its answers equal those of the same corpus built into a local folder,
its BM25 shards, layouts and vector blocks come through the local shard cache, and an update
committed to the bucket is picked up by the running service without a restart."""
from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Iterator

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("boto3")

from runners.cli import main, make_parser  # noqa: E402
from runners.serve_cli import build_app  # noqa: E402
from tests.support.cluster import S3Endpoint, upload_folder  # noqa: E402
from tests.support.corpus import SMALL, write_corpus  # noqa: E402
from tests.support.live_server import STAFF, LiveServer, uvicorn_in_thread, write_keys  # noqa: E402
from vdgr_core.store.manifest import read_manifest  # noqa: E402

BUCKET = "vdgr-serve"
HASHING = ["--embedding", "hashing", "-q"]
QUESTIONS = ("How long do I hold RESET on the Orbit X2?", "How many days of annual leave do employees get?",
             "Which scheduler drives the SKU-90214-B radio?", "What uplink does the Nova switch have?")
RELOAD_WAIT_S = 120          # an upper bound for the reload thread to see the new manifest


@pytest.fixture(scope="module")
def s3():
    with S3Endpoint() as endpoint:
        endpoint.client().create_bucket(Bucket=BUCKET)
        yield endpoint


@pytest.fixture
def s3_env(s3, monkeypatch, tmp_path):
    """This process (driver and service) finds S3 through the standard variables; its shard
    cache is a folder of its own."""
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("VDGR_SHARD_CACHE", str(tmp_path / "shard-cache"))
    return s3


@contextmanager
def serve(index: str, keys: str, reload_s: float = 0.0) -> Iterator[LiveServer]:
    """``vdgr serve --index INDEX`` as its command line builds it, on a real uvicorn server."""
    args, extra = make_parser().parse_known_args(
        ["serve", "--index", index, "--api-keys", keys, "--embedding", "hashing",
         "--rate-limit", "1000/minute", "--reload-interval", str(reload_s)])
    assert not extra
    app = build_app(args)
    with uvicorn_in_thread(app, "vdgr-test-s3-serve") as port:
        yield LiveServer(f"http://127.0.0.1:{port}", "127.0.0.1", port, app, app.state.service.holder)


def answers(live: LiveServer) -> dict[str, tuple[list, str]]:
    """Per question: the evidence (as served) and the answer text."""
    out = {}
    for q in QUESTIONS:
        status, _, body = live.request("POST", "/v1/query", {"question": q}, key=STAFF)
        assert status == 200, body
        out[q] = (body["evidence"], body["answer"])
    return out


def wait_for_build(live: LiveServer, build_id: str) -> dict:
    """/healthz once the service serves ``build_id`` (its reload thread swapped), bounded."""
    deadline = time.monotonic() + RELOAD_WAIT_S
    while True:
        _, _, health = live.request("GET", "/healthz")
        if health["build_id"] == build_id or time.monotonic() > deadline:
            return health
        time.sleep(0.1)


def test_serve_answers_from_an_s3_index_as_from_a_local_one_and_reloads_an_update(s3_env, tmp_path):
    client = s3_env.client()
    corpus = write_corpus(str(tmp_path / "corpus"), SMALL)
    upload_folder(client, BUCKET, "serve/corpus", corpus)
    index, local = f"s3://{BUCKET}/serve/index", str(tmp_path / "local")
    keys = write_keys(str(tmp_path / "keys.yaml"))

    assert main(["index", f"s3://{BUCKET}/serve/corpus", "--index", index, *HASHING]) == 0
    assert main(["index", corpus, "--index", local, *HASHING]) == 0
    assert read_manifest(index).build_id == read_manifest(local).build_id

    with serve(local, keys) as live_local:
        expected = answers(live_local)
    with serve(index, keys, reload_s=0.1) as live:
        got = answers(live)
        assert got == expected
        assert any("10 seconds" in a for _, a in got.values())
        cache = tmp_path / "shard-cache"
        assert {"tantivy", "layout"} <= set(os.listdir(cache))      # the shards came through the cache

        # an edit, a delete and an add committed to the bucket by `vdgr update`
        changes = {"hr/leave.md": SMALL["hr/leave.md"] + "\n## Sick leave\n\nReport sick leave within one day.\n",
                   "net/switches/vega.md": "# Vega Switch Guide\n\n## Ports\n\nThe Vega switch has 48 ports.\n"}
        for rel, text in changes.items():
            write_corpus(corpus, {rel: text})
            client.put_object(Bucket=BUCKET, Key=f"serve/corpus/{rel}", Body=text.encode())
        os.remove(os.path.join(corpus, "net", "switches", "nova.md"))
        client.delete_object(Bucket=BUCKET, Key="serve/corpus/net/switches/nova.md")
        old = live.holder.current().build_id
        assert main(["update", f"s3://{BUCKET}/serve/corpus", "--index", index, *HASHING]) == 0
        new = read_manifest(index).build_id
        assert new != old
        health = wait_for_build(live, new)              # the running service's reload thread
        assert health["build_id"] == new and health["reloads"] == 1 and health["reload_failures"] == 0
        updated = answers(live)

    fresh = str(tmp_path / "fresh")
    assert main(["index", corpus, "--index", fresh, *HASHING]) == 0
    assert read_manifest(fresh).build_id == new
    with serve(fresh, keys) as live_fresh:
        assert updated == answers(live_fresh)
    assert updated != got
    assert not any("nova.md" in e["source"] for ev, _ in updated.values() for e in ev)
