"""Boot one Beam Python SDK worker for a worker pool, with the job's pipeline options.

A Beam worker pool (``python -m apache_beam.runners.worker.worker_pool_main``) started without
``--container_executable`` runs each SDK worker as a bare ``SdkHarness``: the job's pipeline
options never reach it, so Beam's ``FileSystems`` there has none and every ``s3://`` or
``gs://`` access fails ("Must provide one of client or options"), Beam's own text source
included. The SDK container avoids this with its ``boot`` program, which asks the runner's
provision service for the job's options and starts ``sdk_worker_main`` with them. This module
is that boot for a pool run from a Python environment where VDGR is installed (no container)::

    printf '#!/bin/sh\\nexec python -m runners.worker_boot "$@"\\n' > vdgr-worker-boot
    chmod +x vdgr-worker-boot
    python -m apache_beam.runners.worker.worker_pool_main --service_port=50000 \\
        --container_executable=$PWD/vdgr-worker-boot

Staged artifacts (``--setup_file``, ``--requirements_file``) are not installed: the pool's
environment must already hold this project and its dependencies, like a custom SDK container.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Optional, Sequence


def worker_environment(worker_id: str, provision_endpoint: str, control_endpoint: str,
                       logging_endpoint: str, base: Optional[dict] = None) -> dict[str, str]:
    """The environment ``sdk_worker_main`` reads: the job's options from the provision service.

    Parameters
    ----------
    worker_id : str
        The id the runner gave this worker (it keys the provision request).
    provision_endpoint, control_endpoint, logging_endpoint : str
        ``host:port`` of the runner's services, as the worker pool received them.
    base : dict, optional
        The environment to extend (default: this process's).
    """
    import grpc
    from google.protobuf import json_format, text_format

    from apache_beam.portability.api import beam_provision_api_pb2, beam_provision_api_pb2_grpc, endpoints_pb2
    from apache_beam.runners.worker.worker_id_interceptor import WorkerIdInterceptor

    channel = grpc.intercept_channel(grpc.insecure_channel(provision_endpoint), WorkerIdInterceptor(worker_id))
    try:
        info = beam_provision_api_pb2_grpc.ProvisionServiceStub(channel).GetProvisionInfo(
            beam_provision_api_pb2.GetProvisionInfoRequest()).info
    finally:
        channel.close()
    control = info.control_endpoint if info.control_endpoint.url else endpoints_pb2.ApiServiceDescriptor(
        url=control_endpoint)
    logging_ = info.logging_endpoint if info.logging_endpoint.url else endpoints_pb2.ApiServiceDescriptor(
        url=logging_endpoint)
    env = dict(os.environ if base is None else base)
    env.update(
        WORKER_ID=worker_id,
        PIPELINE_OPTIONS=json_format.MessageToJson(info.pipeline_options),
        CONTROL_API_SERVICE_DESCRIPTOR=text_format.MessageToString(control),
        LOGGING_API_SERVICE_DESCRIPTOR=text_format.MessageToString(logging_),
        RUNNER_CAPABILITIES=" ".join(info.runner_capabilities),
        SEMI_PERSISTENT_DIRECTORY=tempfile.mkdtemp(prefix="beam-worker-"),
    )
    return env


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Parse the container contract's flags, fetch the options, exec ``sdk_worker_main``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag in ("id", "logging_endpoint", "artifact_endpoint", "provision_endpoint", "control_endpoint"):
        parser.add_argument(f"--{flag}", required=flag != "artifact_endpoint")
    args, _ = parser.parse_known_args(argv)
    env = worker_environment(args.id, args.provision_endpoint, args.control_endpoint, args.logging_endpoint)
    os.execve(sys.executable, [sys.executable, "-m", "apache_beam.runners.worker.sdk_worker_main"], env)


if __name__ == "__main__":
    main()
