"""Beam's S3 filesystem shares one boto3 client per process (pipelines/s3_clients.py), and every
SDK worker gets that through ``--beam_plugins``."""
from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("boto3")

from apache_beam.io.aws import s3io  # noqa: E402
from apache_beam.io.filesystems import FileSystems  # noqa: E402
from apache_beam.options.pipeline_options import SetupOptions  # noqa: E402

from pipelines import s3_clients  # noqa: E402
from tests.support.moto_s3 import moto_bucket  # noqa: E402
from pipelines.options import pipeline_options, use_filesystem_options  # noqa: E402

BUCKET = "vdgr-clients"


@pytest.fixture
def s3(monkeypatch):
    with moto_bucket(monkeypatch, BUCKET):
        yield f"s3://{BUCKET}"


def test_every_pipeline_names_the_plugin():
    plugins = pipeline_options(["--runner=PortableRunner"]).view_as(SetupOptions).beam_plugins
    assert s3_clients.PLUGIN in plugins


def test_beam_s3_calls_share_one_client_per_endpoint(s3, monkeypatch):
    options = use_filesystem_options([])
    first = s3io.S3IO(options=options).client.client
    assert s3io.S3IO(options=options).client.client is first
    with FileSystems.create(f"{s3}/a/part") as f:
        f.write(b"staged rows")
    with FileSystems.open(f"{s3}/a/part") as f:
        assert f.read() == b"staged rows"
    assert FileSystems.exists(f"{s3}/a/part")
    assert s3io.S3IO(options=options).client.client is first
    # another endpoint in the environment (a test's second S3 server): another client
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    assert s3io.S3IO(options=options).client.client is not first


def test_an_sdk_worker_installs_it_from_its_job_options():
    code = ("from apache_beam.runners.worker.sdk_worker_main import _import_beam_plugins\n"
            f"_import_beam_plugins([{s3_clients.PLUGIN!r}])\n"
            "from apache_beam.io.aws.clients.s3 import boto3_client\n"
            "assert boto3_client.boto3.vdgr_shared\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
