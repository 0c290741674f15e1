"""A real S3 protocol server (moto's) on 127.0.0.1 for tests, with one bucket made."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest


@contextmanager
def moto_bucket(monkeypatch: pytest.MonkeyPatch, bucket: str) -> Iterator[object]:
    """Start moto's server, point the AWS environment at it (test credentials, us-east-1),
    create ``bucket`` and yield a boto3 S3 client; the server stops on exit.

    Skips the test when moto's server or boto3 is not installed.
    """
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    srv.start()
    try:
        host, port = srv.get_host_and_port()
        for k, v in {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "test",
                     "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
                     "AWS_REGION": "us-east-1"}.items():
            monkeypatch.setenv(k, v)
        client = boto3.client("s3")
        client.create_bucket(Bucket=bucket)
        yield client
    finally:
        srv.stop()
