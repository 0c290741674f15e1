"""One boto3 S3 client per process for Beam's S3 filesystem (a Beam plugin).

Beam 2.77's ``S3FileSystem`` builds a new ``S3IO`` for every call (``open``, ``create``,
``exists``, ``delete``...), and each ``S3IO`` a new boto3 session and client, which parses
botocore's JSON service model again: ~0.2 s of CPU per call. A build reads every document and
writes every staged file through ``FileSystems``, so on a 2k-chunk corpus to ``s3://`` this
was ~60% of the driver's CPU (py-spy; docs/DECISIONS.md).

Importing this module makes the boto3 factory of Beam's S3 client module hand out one client
per set of arguments and AWS environment (``AWS_*`` variables: a test that starts another
endpoint gets another client). botocore clients are thread-safe. Beam's own code is unchanged.

It reaches the processes that run DoFns as a Beam plugin: :func:`pipelines.options.pipeline_options`
adds ``--beam_plugins=pipelines.s3_clients``; the in-process runner runs DoFns in the driver,
which imported it, and an SDK worker that gets its job's options (worker pools booted by
:mod:`runners.worker_boot`, the SDK container under Flink or Dataflow) imports the job's plugins
at startup. FnApiRunner's ``multi_processing`` workers, which Beam 2.77 starts with empty
pipeline options, get the driver's through ``PIPELINE_OPTIONS_FILE`` (:mod:`pipelines.local_workers`).
"""
from __future__ import annotations

import os
import threading
from types import SimpleNamespace
from typing import Any

PLUGIN = __name__

_LOCK = threading.Lock()
_CLIENTS: dict[tuple, Any] = {}


def _aws_environment() -> tuple:
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))


def shared_client(**kwargs: Any):
    """A boto3 client for ``kwargs`` (``session.client`` arguments), made once per process for
    those arguments and the current ``AWS_*`` environment."""
    import boto3

    key = (tuple(sorted((k, repr(v)) for k, v in kwargs.items())), _aws_environment())
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = boto3.session.Session().client(**kwargs)
        return client


class _SharedClientSession:
    """Stands in for ``boto3.session.Session`` where Beam's S3 client module makes one."""

    def client(self, **kwargs: Any):
        return shared_client(**kwargs)


def install() -> bool:
    """Make Beam's S3 client module share clients (idempotent); False when Beam's AWS support
    or boto3 is not installed."""
    try:
        import boto3  # noqa: F401

        from apache_beam.io.aws.clients.s3 import boto3_client
    except ImportError:
        return False
    if getattr(boto3_client.boto3, "vdgr_shared", False):
        return True
    boto3_client.boto3 = SimpleNamespace(session=SimpleNamespace(Session=_SharedClientSession), vdgr_shared=True)
    return True


install()

__all__ = ["PLUGIN", "install", "shared_client"]
