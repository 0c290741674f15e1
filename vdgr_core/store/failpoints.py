"""Named failpoints: crash the process at a commit phase, to test that a crash loses nothing.

``failpoint("commit.staged")`` does nothing unless the environment variable ``VDGR_FAILPOINT``
names that point (a comma-separated list may name several); then the process kills itself with
SIGKILL on the spot: no ``finally`` block, no atexit handler, no flush, as a power cut or an
out-of-memory kill would. tests/pipelines/test_crash_safety.py runs ``vdgr index`` and
``vdgr update`` with each point and checks that readers see the old or the new index and that a
rerun converges to a full build.

The points, in commit order (ARCHITECTURE.md, commit protocol):

``commit.staged``
    the pipeline (or the update's driver) has staged every row; nothing of the index changed.
``commit.shards_published``
    the BM25 shards are published (whole, under their digest); no table written yet.
``store.folder_uploaded_without_marker``
    object stores: a shard's files are uploaded, its completion marker is not.
``commit.layouts_published``
    the query layouts of the domains are published (whole, under their digest); the manifest
    does not name them yet.
``commit.cache_written``
    the embedding cache has the new vectors (a cache: never read through the manifest).
``commit.table_written.<table>``
    that LanceDB table has its new version (tables are written in parallel).
``commit.manifest_before_rename``
    the new manifest is written and fsynced under a temporary name, not yet renamed.
``commit.manifest_written``
    the new manifest is in place (the commit is done; staging not yet removed).
"""
from __future__ import annotations

import os
import signal

ENV = "VDGR_FAILPOINT"

POINTS = ("commit.staged", "commit.shards_published", "store.folder_uploaded_without_marker",
          "commit.layouts_published", "commit.cache_written",
          "commit.manifest_before_rename", "commit.manifest_written")
TABLE_POINT = "commit.table_written.{}"


def failpoint(name: str) -> None:
    """Kill this process with SIGKILL if ``VDGR_FAILPOINT`` names ``name``; otherwise nothing."""
    wanted = os.environ.get(ENV)
    if wanted and name in wanted.split(","):
        os.kill(os.getpid(), signal.SIGKILL)


__all__ = ["ENV", "POINTS", "TABLE_POINT", "failpoint"]
