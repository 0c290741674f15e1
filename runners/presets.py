"""Runner presets: named sets of standard Beam options for where a build runs.

Each preset only fills in flags the user did not give; anything on the command line wins.
"""
from __future__ import annotations

from typing import Sequence

PRESETS: dict[str, tuple[str, ...]] = {
    # In-process, the default: fast start, one Python process.
    "direct": ("--runner=FnApiRunner",),
    # Several SDK worker processes on this machine (Beam's portable worker path).
    "multiprocess": ("--runner=FnApiRunner", "--direct_running_mode=multi_processing",
                     "--direct_num_workers=2"),
    # A Flink cluster through Beam's portable Flink runner (job server jar from the Flink runner).
    # Give --flink_master=host:8081 and an object-store --index (gs://, s3://) for the tables.
    "flink": ("--runner=FlinkRunner", "--environment_type=PROCESS",
              "--parallelism=4"),
    # Google Cloud Dataflow. Give --project, --region, --temp_location=gs://... and a
    # worker image or --requirements_file/--setup_file=./setup.py so workers get the code.
    "dataflow": ("--runner=DataflowRunner", "--setup_file=./setup.py",
                 "--experiments=use_runner_v2"),
}


def _flag_name(arg: str) -> str:
    return arg.split("=", 1)[0]


def apply_preset(name: str, beam_args: Sequence[str]) -> list[str]:
    """Return ``beam_args`` with the preset's flags added where the user gave none."""
    if name not in PRESETS:
        raise ValueError(f"unknown runner preset {name!r}; choose from {sorted(PRESETS)}")
    given = {_flag_name(a) for a in beam_args if a.startswith("--")}
    return list(beam_args) + [a for a in PRESETS[name] if _flag_name(a) not in given]
