"""What a build gives the SDK worker processes it starts: options, and a quiet standard error."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.local_workers import (OPTIONS_FILE_ENV, filtered_stderr, is_worker_notice, options_for_workers,
                                     worker_options)

CHILD = r"""
import sys
sys.stderr.write("INFO:apache_beam.runners.worker.sdk_worker:Control channel established.\n")
sys.stderr.write("WARNING:root:apitools not found, and bigquery client libraries are not available\n")
sys.stderr.write("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: INFO: kept\n")
"""


def test_worker_notices_are_dropped_and_everything_else_passes(capfd):
    with filtered_stderr():
        subprocess.run([sys.executable, "-c", CHILD], check=True)
        # through descriptor 2, as the driver's standard error is outside pytest: capfd's
        # sys.stderr writes to the capture file directly, ahead of the copier thread
        os.write(2, b"[vdgr] the driver's own line\n")
    err = capfd.readouterr().err
    assert err.splitlines() == ["Traceback (most recent call last):", '  File "x.py", line 1',
                                "ValueError: INFO: kept", "[vdgr] the driver's own line"]
    assert is_worker_notice(b"WARNING:__main__:No semi_persistent_directory found: x\n")
    assert not is_worker_notice(b"ERROR:__main__:Could not load main session\n")


def test_workers_read_the_drivers_options_at_warning_level():
    options = PipelineOptions(["--runner=FnApiRunner", "--beam_plugins=pipelines.s3_clients"])
    doc = worker_options(options)["options"]
    assert doc["beam_plugins"] == ["pipelines.s3_clients"]
    assert doc["default_sdk_harness_log_level"] == "WARNING"
    assert os.environ.get(OPTIONS_FILE_ENV) is None
    with options_for_workers(options) as path:
        assert os.environ[OPTIONS_FILE_ENV] == path
        # read as Beam's worker reads it
        from apache_beam.runners.worker.sdk_worker_main import _load_pipeline_options
        with open(path, encoding="utf-8") as f:
            assert _load_pipeline_options(f.read())["beam_plugins"] == ["pipelines.s3_clients"]
    assert os.environ.get(OPTIONS_FILE_ENV) is None and not os.path.exists(path)
    json.dumps(worker_options(PipelineOptions([])))     # serialisable with nothing given
