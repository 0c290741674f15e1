"""Beam pipeline options with VDGR's defaults (FnApiRunner locally; any runner by flag)."""
from __future__ import annotations

from typing import Sequence

from apache_beam.options.pipeline_options import PipelineOptions

DEFAULT_RUNNER = "FnApiRunner"


def pipeline_options(beam_args: Sequence[str] = ()) -> PipelineOptions:
    """Parse standard Beam flags; add ``--runner=FnApiRunner`` when no runner is named.

    Plain DirectRunner first tries to download the Prism binary, which fails offline.
    """
    args = list(beam_args)
    if not any(a == "--runner" or a.startswith("--runner=") for a in args):
        args.append(f"--runner={DEFAULT_RUNNER}")
    return PipelineOptions(args)


def runs_in_this_process(options: PipelineOptions) -> bool:
    """True when DoFns run inside this Python process (FnApiRunner, in-memory mode)."""
    from apache_beam.options.pipeline_options import DirectOptions, StandardOptions

    runner = options.view_as(StandardOptions).runner or DEFAULT_RUNNER
    mode = options.view_as(DirectOptions).direct_running_mode
    return runner in ("FnApiRunner", "DirectRunner") and mode in (None, "in_memory")
