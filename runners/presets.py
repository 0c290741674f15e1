"""Runner presets: named sets of standard Beam options for where a build runs.

Each preset only fills in flags the user did not give; anything on the command line wins.
What each runner needs besides the preset, and what works where, is in docs/RUNNERS.md.
"""
from __future__ import annotations

import os
from typing import Sequence

# Workers install the project from this setup.py (absolute, so the preset works from any cwd).
_REPO_SETUP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "setup.py")
SETUP_FILE = _REPO_SETUP if os.path.isfile(_REPO_SETUP) else "./setup.py"

PRESETS: dict[str, tuple[str, ...]] = {
    # The default: no runner named, so the build chooses (pipelines/options.auto_runner_args):
    # in-process, or one SDK worker process per core for a large build with no local model.
    "auto": (),
    # In-process: fast start, one Python process.
    "direct": ("--runner=FnApiRunner",),
    # Several SDK worker processes on this machine (Beam's portable worker path: every DoFn is
    # pickled, sent over the Fn API and run in another process).
    "multiprocess": ("--runner=FnApiRunner", "--direct_running_mode=multi_processing",
                     "--direct_num_workers=2"),
    # A Flink cluster through Beam's portable Flink runner. Give --flink_master=host:8081.
    # The job server jar is fetched from Maven unless --flink_job_server_jar=PATH is given.
    # Neither this preset nor "dataflow" has run against its runner (docs/RUNNERS.md).
    # DOCKER workers install this project from --setup_file at start-up; for PROCESS workers
    # give --environment_type=PROCESS --environment_config='{"command": "/opt/apache/beam/boot"}'.
    "flink": ("--runner=FlinkRunner", "--environment_type=DOCKER", f"--setup_file={SETUP_FILE}",
              "--parallelism=4"),
    # Google Cloud Dataflow (needs apache-beam[gcp]). Give --project, --region and
    # --temp_location=gs://...; workers install this project from --setup_file.
    "dataflow": ("--runner=DataflowRunner", f"--setup_file={SETUP_FILE}",
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
