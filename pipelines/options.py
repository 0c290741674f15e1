"""Beam pipeline options with VDGR's defaults (FnApiRunner locally; any runner by flag)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:          # Beam is imported by the functions that need it: runs_in_this_process
    from apache_beam.options.pipeline_options import PipelineOptions   # is asked before Beam loads

DEFAULT_RUNNER = "FnApiRunner"


#: how long a driver watches a portable runner's job (``--job_server_timeout`` when not given):
#: Beam puts that flag's deadline (300 s by default) on the job's state and message streams
#: too, so a job running longer fails in the driver with ``DEADLINE_EXCEEDED`` while it goes
#: on on the cluster (a 100k-chunk build on one worker pool here took over 300 s). 30 days.
JOB_WATCH_S = 30 * 24 * 3600
#: how long :func:`check_job_endpoint` waits for a job service to answer
JOB_CONNECT_S = 60
#: runners that run the pipeline without a job service
_NO_JOB_SERVICE = ("FnApiRunner", "DirectRunner", "DataflowRunner", "BundleBasedDirectRunner", "SwitchingDirectRunner")


def _has_flag(args: Sequence[str], name: str) -> bool:
    return any(a == name or a.startswith(name + "=") for a in args)


def uses_job_service(beam_args: Sequence[str]) -> bool:
    """True when the runner ``beam_args`` name submits the job to a job service (PortableRunner,
    FlinkRunner, SparkRunner, PrismRunner: Beam's portable runners)."""
    return _flag(beam_args, "--runner", DEFAULT_RUNNER) not in _NO_JOB_SERVICE


def pipeline_options(beam_args: Sequence[str] = ()) -> PipelineOptions:
    """Parse standard Beam flags; add ``--runner=FnApiRunner`` when no runner is named.

    Plain DirectRunner first tries to download the Prism binary, which fails offline. Every
    worker imports :mod:`pipelines.s3_clients` (``--beam_plugins``): one S3 client per process
    for Beam's S3 filesystem instead of one per call. A runner with a job service is watched
    for :data:`JOB_WATCH_S` unless ``--job_server_timeout`` is given (Beam's 300 s would end
    the driver of any longer job; :func:`check_job_endpoint` keeps a wrong ``--job_endpoint``
    from waiting that long).
    """
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines import s3_clients

    args = list(beam_args)
    if not _has_flag(args, "--runner"):
        args.append(f"--runner={DEFAULT_RUNNER}")
    if uses_job_service(args) and not _has_flag(args, "--job_server_timeout"):
        args.append(f"--job_server_timeout={JOB_WATCH_S}")
    args.append(f"--beam_plugins={s3_clients.PLUGIN}")
    return PipelineOptions(args)


def check_job_endpoint(options: PipelineOptions, timeout_s: float | None = None) -> None:
    """Raise :class:`~schemas.errors.RunnerUnavailableError` when ``options`` name a
    ``--job_endpoint`` that no job service answers at within ``timeout_s`` (default
    :data:`JOB_CONNECT_S`; Beam would wait for it as long as ``--job_server_timeout``). Nothing
    to check without a job endpoint, for Beam's in-process one (``embed``), or when the job
    server timeout is the caller's own, not :data:`JOB_WATCH_S`."""
    from apache_beam.options.pipeline_options import PortableOptions, StandardOptions

    portable = options.view_as(PortableOptions)
    endpoint = portable.job_endpoint
    if (not endpoint or endpoint.startswith("embed") or portable.job_server_timeout != JOB_WATCH_S
            or (options.view_as(StandardOptions).runner or DEFAULT_RUNNER) in _NO_JOB_SERVICE):
        return
    import grpc

    from schemas.errors import RunnerUnavailableError

    channel = grpc.insecure_channel(endpoint)
    try:
        timeout_s = JOB_CONNECT_S if timeout_s is None else timeout_s
        grpc.channel_ready_future(channel).result(timeout=timeout_s)
    except grpc.FutureTimeoutError:
        raise RunnerUnavailableError(
            f"no job service answered at --job_endpoint={endpoint} within {timeout_s:g} s; no job ran and "
            "nothing was committed (start the job service, or give --job_server_timeout=SECONDS to wait "
            "longer; docs/RUNNERS.md)") from None
    finally:
        channel.close()


def use_filesystem_options(beam_args: Sequence[str] = ()) -> PipelineOptions:
    """Give Beam's ``FileSystems`` in this process the pipeline options of ``beam_args``.

    Beam sets them when a ``Pipeline`` is created; the driver reads and writes the object store
    through ``FileSystems`` before that (the staging area, the update's fingerprints), and
    Beam's S3 filesystem refuses to work without options ("Must provide one of client or
    options"). With them, it takes ``--s3_endpoint_url`` or, like boto3, ``AWS_ENDPOINT_URL``.
    """
    from apache_beam.io.filesystems import FileSystems

    options = pipeline_options(beam_args)
    FileSystems.set_options(options)
    return options


def _flag(beam_args: Sequence[str], name: str, default: str) -> str:
    """The last value ``beam_args`` give flag ``name`` (``--name=value`` or ``--name value``)."""
    value, args = default, list(beam_args)
    for i, arg in enumerate(args):
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        elif arg == name and i + 1 < len(args):
            value = args[i + 1]
    return value


def runs_in_this_process(beam_args: Sequence[str]) -> bool:
    """True when DoFns run inside this Python process (FnApiRunner, in-memory mode), read from
    the flags as text: a command asks before it imports Beam (runners/index_cli.py, whether to
    start the early embedder)."""
    runner = _flag(beam_args, "--runner", DEFAULT_RUNNER)
    mode = _flag(beam_args, "--direct_running_mode", "in_memory")
    return runner in ("FnApiRunner", "DirectRunner") and mode == "in_memory"


#: a full build with no runner named runs on one SDK worker process per core when it has at
#: least this many documents and its embedder is not a local model (the model already has its
#: own process and threads); below it, starting the workers and moving every element between
#: processes costs more than the second core gives (:func:`auto_runner_args`)
AUTO_WORKERS_MIN_DOCUMENTS = 4000


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not Linux
        return os.cpu_count() or 1


def names_runner(beam_args: Sequence[str]) -> bool:
    """True when ``beam_args`` choose a runner or its running mode."""
    return any(a.split("=", 1)[0] in ("--runner", "--direct_running_mode", "--direct_num_workers")
               for a in beam_args)


def auto_runner_args(beam_args: Sequence[str], *, documents: int, local_model: bool,
                     remote: bool = False, cores: int | None = None) -> list[str]:
    """``beam_args`` with the runner chosen for a build, when they name none.

    The in-process FnApiRunner uses one core for the pipeline; a local model embeds in a child
    process with the other cores, so that build keeps it. A build whose embedder needs no local
    model (hashing, or a remote one) and that has at least :data:`AUTO_WORKERS_MIN_DOCUMENTS`
    documents runs on ``cores`` SDK worker processes instead (``multi_processing`` mode); the
    index is the same either way (tests/pipelines/test_auto_runner.py). A ``remote`` build (corpus
    or index in object storage) stays in process: one process shares one S3 client and its
    connections, measured 2-4x faster than worker processes at 2k documents (docs/SCALE.md).
    Flags the user gave are kept as they are.
    """
    args = list(beam_args)
    if names_runner(args):
        return args
    cores = usable_cores() if cores is None else cores
    if local_model or remote or cores < 2 or documents < AUTO_WORKERS_MIN_DOCUMENTS:
        return args + [f"--runner={DEFAULT_RUNNER}"]
    return args + [f"--runner={DEFAULT_RUNNER}", "--direct_running_mode=multi_processing",
                   f"--direct_num_workers={cores}"]


def local_worker_processes(options: PipelineOptions) -> bool:
    """True when the runner's workers are other processes on this machine (FnApiRunner in
    ``multi_processing`` mode): they inherit this process's environment."""
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

    runner = options.view_as(StandardOptions).runner or DEFAULT_RUNNER
    return (runner in ("FnApiRunner", "DirectRunner")
            and options.view_as(DirectOptions).direct_running_mode == "multi_processing")
