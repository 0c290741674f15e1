"""Beam pipeline options with VDGR's defaults (FnApiRunner locally; any runner by flag)."""
from __future__ import annotations

from typing import Sequence

from apache_beam.options.pipeline_options import PipelineOptions

DEFAULT_RUNNER = "FnApiRunner"


def pipeline_options(beam_args: Sequence[str] = ()) -> PipelineOptions:
    """Parse standard Beam flags; add ``--runner=FnApiRunner`` when no runner is named.

    Plain DirectRunner first tries to download the Prism binary, which fails offline. Every
    worker imports :mod:`pipelines.s3_clients` (``--beam_plugins``): one S3 client per process
    for Beam's S3 filesystem instead of one per call.
    """
    from pipelines import s3_clients

    args = list(beam_args)
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    args.append(f"--beam_plugins={s3_clients.PLUGIN}")
    return PipelineOptions(args)


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


def runs_in_this_process(options: PipelineOptions) -> bool:
    """True when DoFns run inside this Python process (FnApiRunner, in-memory mode)."""
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

    runner = options.view_as(StandardOptions).runner or DEFAULT_RUNNER
    mode = options.view_as(DirectOptions).direct_running_mode
    return runner in ("FnApiRunner", "DirectRunner") and mode in (None, "in_memory")
