"""Named failpoints: crash the process at a commit phase, to test that a crash loses nothing.

``failpoint("commit.staged")`` does nothing unless the environment variable ``VDGR_FAILPOINT``
names that point (a comma-separated list may name several); then the process kills itself with
SIGKILL on the spot: no ``finally`` block, no atexit handler, no flush, as a power cut or an
out-of-memory kill would. tests/pipelines/test_crash_safety.py runs ``vdgr index`` and
``vdgr update`` with each point and checks that readers see the old or the new index and that a
rerun converges to a full build.

The points, in commit order (ARCHITECTURE.md, commit protocol):

``store.fragments_written``
    a worker (or an update's driver) has written Lance fragments of a table that no version
    names yet.
``commit.staged``
    the pipeline (or the update's driver) has staged every row; nothing of the index changed.
``commit.shards_published``
    the BM25 shards are published (whole, under their digest); no table written yet.
``store.folder_uploaded_without_marker``
    object stores: a shard's files are uploaded, its completion marker is not.
``commit.layouts_published``
    the query layouts of the domains are published (whole, under their digest); the manifest
    does not name them yet.
``commit.table_written.<table>``
    that LanceDB table has its new version (one metadata-only commit naming its fragments).
``commit.cache_written``
    the embedding cache has the new vectors (a cache: never read through the manifest).
``commit.manifest_before_rename``
    the new manifest is written and fsynced under a temporary name, not yet renamed.
``commit.manifest_written``
    the new manifest is in place (the commit is done; staging not yet removed).

With ``VDGR_FAILPOINT_MARKER`` set to a path or URI as well, a named point does not kill the
process: it writes that marker object (the point's name and the process id) and stops there
for good, so that a test can kill the process, or the machine under it, at that exact point,
deterministically (tests/runners/test_cluster.py kills a whole Beam worker pool this way).
"""
from __future__ import annotations

import os
import signal
import threading

ENV = "VDGR_FAILPOINT"
MARKER_ENV = "VDGR_FAILPOINT_MARKER"

POINTS = ("store.fragments_written", "commit.staged", "commit.shards_published", "store.folder_uploaded_without_marker",
          "commit.layouts_published", "commit.cache_written",
          "commit.manifest_before_rename", "commit.manifest_written")
TABLE_POINT = "commit.table_written.{}"


def failpoint(name: str) -> None:
    """Kill this process with SIGKILL if ``VDGR_FAILPOINT`` names ``name``; otherwise nothing.

    With ``VDGR_FAILPOINT_MARKER`` set, write that marker and block the calling thread for good
    instead (the process is left for the test to kill)."""
    wanted = os.environ.get(ENV)
    if wanted and name in wanted.split(","):
        marker = os.environ.get(MARKER_ENV)
        if marker:
            _write_marker(marker, f"{name} {os.getpid()}\n".encode())
            threading.Event().wait()
        os.kill(os.getpid(), signal.SIGKILL)


def _write_marker(uri: str, data: bytes) -> None:
    import pyarrow.fs as pafs

    if "://" in uri:
        fs, path = pafs.FileSystem.from_uri(uri)
    else:
        fs, path = pafs.LocalFileSystem(), os.path.abspath(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with fs.open_output_stream(path) as f:
        f.write(data)


__all__ = ["ENV", "MARKER_ENV", "POINTS", "TABLE_POINT", "failpoint"]
