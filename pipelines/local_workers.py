"""What a build gives the SDK worker processes it starts on this machine.

FnApiRunner's ``multi_processing`` mode starts ``python -m apache_beam.runners.worker.sdk_worker_main``
processes that inherit this process's environment and standard error, but not its pipeline
options (the runner provisions them with none). So, for the length of the run:

* the options travel in a file named by ``PIPELINE_OPTIONS_FILE``, which the worker reads at
  start (Beam's own mechanism): ``--beam_plugins`` (one S3 client per process) reaches the
  workers, and their log level is WARNING instead of INFO;
* the workers' counts reach the driver's progress lines (:func:`vdgr_core.progress.counting_workers`);
* notices the worker prints about itself before it has read any option (``apitools not found``,
  the harness's INFO lines) are dropped from standard error; everything else, tracebacks
  included, passes unchanged.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import threading
from typing import Iterator

from apache_beam.options.pipeline_options import PipelineOptions

from vdgr_core.progress import PROGRESS, counting_workers

#: Beam's environment variable naming a JSON file of pipeline options for an SDK worker
OPTIONS_FILE_ENV = "PIPELINE_OPTIONS_FILE"

#: lines an SDK worker writes to standard error that say nothing to the user of a build: the
#: harness's own INFO/DEBUG lines and library notices logged on the root logger at import
_NOTICE = re.compile(rb"^(?:(?:INFO|DEBUG):|WARNING:root:apitools not found|"
                     rb"WARNING:__main__:No (?:semi_persistent_directory|session file) found)")


def is_worker_notice(line: bytes) -> bool:
    """True for a standard-error line of an SDK worker that :func:`filtered_stderr` drops."""
    return _NOTICE.match(line) is not None


def worker_options(options: PipelineOptions) -> dict:
    """The options document an SDK worker reads from :data:`OPTIONS_FILE_ENV`: the driver's
    options, with the harness's log level at WARNING (its start-up chatter is INFO)."""
    given = options.get_all_options(drop_default=True)
    given.setdefault("default_sdk_harness_log_level", "WARNING")
    given.setdefault("sdk_harness_log_level_overrides", {"__main__": "ERROR"})
    return {"options": given}


@contextlib.contextmanager
def options_for_workers(options: PipelineOptions) -> Iterator[str]:
    """Within the block, SDK workers started from this process read ``options`` (a temporary
    file named in :data:`OPTIONS_FILE_ENV`). Yields the file's path."""
    fd, path = tempfile.mkstemp(prefix="vdgr-worker-options-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(worker_options(options), f, default=str)
    previous = os.environ.get(OPTIONS_FILE_ENV)
    os.environ[OPTIONS_FILE_ENV] = path
    try:
        yield path
    finally:
        if previous is None:
            os.environ.pop(OPTIONS_FILE_ENV, None)
        else:
            os.environ[OPTIONS_FILE_ENV] = previous
        os.unlink(path)


@contextlib.contextmanager
def filtered_stderr() -> Iterator[None]:
    """Within the block, file descriptor 2 (this process's and every child's started meanwhile)
    is a pipe whose lines are copied to the real standard error unless :func:`is_worker_notice`.

    A child that outlives the block keeps writing through the copier, which then runs until the
    child closes its end; the saved descriptor is never closed under it.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def copy() -> None:
        with os.fdopen(read_end, "rb") as src, os.fdopen(saved, "wb", buffering=0, closefd=False) as dst:
            for line in src:
                if not is_worker_notice(line):
                    dst.write(line)

    copier = threading.Thread(target=copy, name="vdgr-worker-stderr", daemon=True)
    copier.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)             # drops this process's write end of the pipe
        copier.join(timeout=5.0)
        if not copier.is_alive():     # else a child still writes through it: keep ``saved``
            os.close(saved)


@contextlib.contextmanager
def local_worker_run(options: PipelineOptions) -> Iterator[None]:
    """Everything a run on local SDK worker processes needs around ``p.run()`` (module doc)."""
    with options_for_workers(options), counting_workers(PROGRESS), filtered_stderr():
        yield


__all__ = ["OPTIONS_FILE_ENV", "filtered_stderr", "is_worker_notice", "local_worker_run",
           "options_for_workers", "worker_options"]
