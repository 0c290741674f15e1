"""A share-nothing Beam cluster on one machine: a local S3 and separate Beam worker pools.

* :class:`S3Endpoint`: moto's S3 server in its own process on 127.0.0.1; every component finds
  it through the standard ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY`` and ``AWS_REGION`` (:meth:`S3Endpoint.env`).
* :class:`WorkerPool`: ``apache_beam.runners.worker.worker_pool_main`` in its own process group,
  with its own working directory, ``HOME`` and ``TMPDIR``, an environment holding only ``PATH``
  (this virtualenv's ``python`` first) and the S3 variables, and, where the kernel allows an
  unprivileged one, a private mount namespace with an empty ``/tmp``. Its SDK workers boot
  through :mod:`runners.worker_boot`, so they get the job's pipeline options.
* :class:`PoolFront`: one worker-pool address that hands each worker the runner asks for to the
  pools in turn. Beam's ``--environment_config`` names one address, and the embedded job
  service starts all of a job's ``--direct_num_workers`` workers there; the front spreads them
  the way a Kubernetes Service in front of worker-pool sidecars would.

Used by tests/runners/test_cluster.py and bench/performance/bench_cluster.py.
"""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Callable, Mapping, Optional, Sequence

VENV_BIN = os.path.dirname(sys.executable)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOOT_SCRIPT = '#!/bin/sh\nexec python -m runners.worker_boot "$@"\n'
REGION = "us-east-1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, what: str, timeout_s: float = 60.0) -> None:
    """Return once ``port`` accepts connections; raise if ``proc`` exits first or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"{what} did not listen on {port} within {timeout_s:.0f} s")


BIND_TRIES = 5


def start_listening(spawn: Callable[[int], subprocess.Popen], what: str) -> tuple[int, subprocess.Popen]:
    """Start a server process on a free port and wait until it listens there.

    ``free_port`` can only pick a port that is free *now*: another process may take it before
    the server binds it, and the server then exits. So a server that exits before it listens
    is started again on a new port, ``BIND_TRIES`` times in all, before the error is raised.

    Returns the port and the process.
    """
    for attempt in range(BIND_TRIES):
        port = free_port()
        proc = spawn(port)
        try:
            wait_for_port(port, proc, what)
            return port, proc
        except RuntimeError:                    # exited before listening: the port was taken?
            proc.wait()
            if attempt == BIND_TRIES - 1:
                raise
    raise AssertionError("unreachable")


def _under_tmp(path: str) -> bool:
    real = os.path.realpath(path)
    return real == "/tmp" or real.startswith("/tmp/")


def unshare_works() -> bool:
    """True when a pool can get a private ``/tmp``: this kernel lets us make a user and mount
    namespace and mount a tmpfs on /tmp, and neither the interpreter nor the project lives under
    /tmp (a fresh clone there would vanish under the tmpfs: the pool's ``python`` not found)."""
    if shutil.which("unshare") is None or _under_tmp(VENV_BIN) or _under_tmp(REPO):
        return False
    r = subprocess.run(["unshare", "-rm", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /tmp"],
                       capture_output=True)
    return r.returncode == 0


class S3Endpoint:
    """moto's S3 server in a child process on 127.0.0.1 (a context manager)."""

    def __init__(self, request_log: Optional[str] = None) -> None:
        self.port = 0                       # and ``url``: set once the server listens
        self.url = ""
        self.request_log = request_log      # where the server logs each request (werkzeug's line)
        self._proc: Optional[subprocess.Popen] = None

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point every client at this endpoint."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION}

    def __enter__(self) -> "S3Endpoint":
        def spawn(port: int) -> subprocess.Popen:
            log = open(self.request_log, "ab") if self.request_log else subprocess.DEVNULL
            try:
                return subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                        stdout=log, stderr=log, start_new_session=True)
            finally:
                if self.request_log:
                    log.close()

        self.port, self._proc = start_listening(spawn, "moto S3 server")
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    @property
    def pid(self) -> int:
        return self._proc.pid

    def client(self):
        """A boto3 S3 client for this endpoint."""
        import boto3

        e = self.env()
        return boto3.client("s3", endpoint_url=self.url, aws_access_key_id=e["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=e["AWS_SECRET_ACCESS_KEY"], region_name=REGION)

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()


def upload_folder(client, bucket: str, prefix: str, folder: str) -> int:
    """Upload every file under ``folder`` to ``s3://bucket/prefix/...``; the number uploaded."""
    n = 0
    for d, _, files in os.walk(folder):
        for f in files:
            path = os.path.join(d, f)
            client.upload_file(path, bucket, f"{prefix}/{os.path.relpath(path, folder)}")
            n += 1
    return n


def object_exists(client, bucket: str, key: str) -> bool:
    return client.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount", 0) > 0


class WorkerPool:
    """One Beam worker pool, sharing nothing with the driver but the S3 endpoint.

    Parameters
    ----------
    home : str
        A fresh folder of its own: it becomes the pool's cwd and holds its boot script, log,
        ``HOME`` and ``TMPDIR``. With a private ``/tmp`` (``private_tmp``) they are ``/tmp/home``
        and ``/tmp`` in the pool's own tmpfs, and the pool finds its boot script through its cwd
        (a folder under the driver's ``/tmp`` is invisible to it by path).
    env : mapping
        Extra environment (the S3 variables; a failpoint for fault tests).
    private_tmp : bool
        Run the pool in a new user and mount namespace with an empty tmpfs on ``/tmp``.
    """

    def __init__(self, home: str, env: Mapping[str, str], private_tmp: bool = False) -> None:
        self.home = home
        self.port = 0                       # and ``address``: set by ``start``
        self.address = ""
        self.private_tmp = private_tmp
        os.makedirs(os.path.join(home, "home"), exist_ok=True)
        os.makedirs(os.path.join(home, "tmp"), exist_ok=True)
        self.boot = os.path.join(home, "vdgr-worker-boot")
        with open(self.boot, "w", encoding="utf-8") as f:
            f.write(BOOT_SCRIPT)
        os.chmod(self.boot, 0o755)
        # PYTHONPATH: the pool runs this checkout's code (from a git worktree too, not the
        # editable install's)
        self.env = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                    "HOME": "/tmp/home" if private_tmp else os.path.join(home, "home"),
                    "TMPDIR": "/tmp" if private_tmp else os.path.join(home, "tmp"), "PYTHONPATH": REPO, **env}
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> "WorkerPool":
        boot = "./" + os.path.basename(self.boot) if self.private_tmp else self.boot
        self._log = open(os.path.join(self.home, "pool.log"), "ab")

        def spawn(port: int) -> subprocess.Popen:
            cmd = ["python", "-m", "apache_beam.runners.worker.worker_pool_main", f"--service_port={port}",
                   f"--container_executable={boot}"]
            if self.private_tmp:
                cmd = ["unshare", "-rm", "--propagation", "private", "sh", "-c",
                       'mount -t tmpfs tmpfs /tmp && mkdir /tmp/home && exec "$@"', "sh", *cmd]
            return subprocess.Popen(cmd, cwd=self.home, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
                                    start_new_session=True)

        self.port, self.proc = start_listening(spawn, f"worker pool in {self.home}")
        self.address = f"localhost:{self.port}"
        return self

    def kill(self) -> None:
        """SIGKILL the pool and every SDK worker it started (its process group), as a lost host."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()
            self._log.close()

    def log(self) -> str:
        with open(os.path.join(self.home, "pool.log"), "rb") as f:
            return f.read().decode("utf-8", "replace")


class PoolFront:
    """A worker-pool service that forwards each ``StartWorker`` to the next pool in turn.

    ``started`` records, per pool address, the worker ids it was given.
    """

    def __init__(self, addresses: Sequence[str]) -> None:
        import grpc

        from apache_beam.portability.api import beam_fn_api_pb2_grpc

        front = self
        self.addresses = list(addresses)
        self.started: dict[str, list[str]] = {a: [] for a in self.addresses}
        self._owner: dict[str, str] = {}
        self._next = itertools.cycle(self.addresses)
        self._lock = threading.Lock()

        class _Servicer(beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolServicer):
            def StartWorker(self, request, context):
                with front._lock:
                    address = next(front._next)
                    front.started[address].append(request.worker_id)
                    front._owner[request.worker_id] = address
                return front._stub(address).StartWorker(request)

            def StopWorker(self, request, context):
                from apache_beam.portability.api import beam_fn_api_pb2

                address = front._owner.get(request.worker_id)
                if address is None:
                    return beam_fn_api_pb2.StopWorkerResponse()
                try:
                    return front._stub(address).StopWorker(request, timeout=10)
                except grpc.RpcError as e:        # the pool is gone (a fault test killed it)
                    return beam_fn_api_pb2.StopWorkerResponse(error=str(e))

        from concurrent import futures

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(_Servicer(), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.address = f"localhost:{self.port}"
        self._channels: dict[str, object] = {}

    def _stub(self, address: str):
        import grpc

        from apache_beam.portability.api import beam_fn_api_pb2_grpc

        if address not in self._channels:
            self._channels[address] = grpc.insecure_channel(address)
        return beam_fn_api_pb2_grpc.BeamFnExternalWorkerPoolStub(self._channels[address])

    def __enter__(self) -> "PoolFront":
        self._server.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.stop(0)
        for ch in self._channels.values():
            ch.close()


class JobService:
    """:mod:`tests.support.job_service` in its own process and folder (a job server, as Flink's).

    Unlike ``--job_endpoint=embed`` (one SDK worker per job), its jobs get
    ``--direct_num_workers`` workers."""

    def __init__(self, home: str, env: Mapping[str, str] = ()) -> None:
        self.home = home
        self.port = 0                       # and ``address``: set once it listens
        self.address = ""
        os.makedirs(os.path.join(home, "tmp"), exist_ok=True)
        self.env = {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home,
                    "TMPDIR": os.path.join(home, "tmp"), "PYTHONPATH": REPO, **dict(env)}
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> "JobService":
        self._log = open(os.path.join(self.home, "job_service.log"), "ab")

        def spawn(port: int) -> subprocess.Popen:
            return subprocess.Popen([sys.executable, "-m", "tests.support.job_service", f"--port={port}"],
                                    cwd=self.home, env=self.env, stdout=self._log, stderr=subprocess.STDOUT,
                                    start_new_session=True)

        self.port, self.proc = start_listening(spawn, "job service")
        self.address = f"localhost:{self.port}"
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait()
            self._log.close()


def external_flags(address: str, workers: int = 1, job_endpoint: str = "embed") -> list[str]:
    """The Beam flags that run a job on the worker pool(s) behind ``address``: through the
    job service at ``job_endpoint`` (``embed``: one in the driver, one SDK worker per job),
    with ``workers`` SDK workers where that job service honours ``--direct_num_workers``."""
    return ["--runner=PortableRunner", f"--job_endpoint={job_endpoint}", "--environment_type=EXTERNAL",
            f"--environment_config={address}", f"--direct_num_workers={workers}"]
