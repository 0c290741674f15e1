"""LanceDB table writes and pinned reads.

Writes (vdgr_core/store/writer.py) return a :class:`TableWrite` (name, version, rows) that tests
and the manifest use; readers open a table at the exact version the manifest names.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

import lancedb

# Lance keeps a cache of index pages and file metadata per session (by default up to 6 GiB and
# 1 GiB). A build's or an update's driver reads each page about once, yet at 1M chunks those
# caches held ~1 GB across its connections by the end of an update (the reader's alone 477 MB),
# most of the update's peak above the build's. Its connections get caches of this size.
DRIVER_CACHE_BYTES = 64 << 20


@dataclass(frozen=True)
class TableWrite:
    """What a table write did: the committed version and the number of rows."""

    name: str
    version: int
    rows: int


def connect(uri: str, cache_bytes: Optional[int] = DRIVER_CACHE_BYTES):
    """Connect to the LanceDB database of an index (a local folder or an object-store URI).

    Parameters
    ----------
    uri : str
        The index folder or URI.
    cache_bytes : int or None
        The size of each of Lance's caches (index pages, file metadata) for this connection:
        small by default, for the build's and the update's drivers and workers; ``None`` keeps
        Lance's defaults (what a query process wants, its vector index partitions cached).
    """
    session = lancedb.Session(index_cache_size_bytes=cache_bytes, metadata_cache_size_bytes=cache_bytes) \
        if cache_bytes is not None else None
    return lancedb.connect(uri.rstrip("/") + "/lance", session=session,
                           storage_options=storage_options(uri) or None)


def storage_options(uri: str) -> dict[str, str]:
    """Lance storage options an ``s3://`` URI needs beyond the standard AWS environment.

    Lance reads ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``), the keys and the region from
    the environment like pyarrow and boto3 do, but refuses a plain ``http://`` endpoint (a local
    S3 such as MinIO or moto) unless told to allow it; pyarrow and boto3 follow the scheme of
    the endpoint. So an ``http://`` endpoint in the environment allows HTTP here too, and every
    component finds the store through the same variables.
    """
    if not str(uri).startswith("s3://"):
        return {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    return {"allow_http": "true"} if endpoint.startswith("http://") else {}


def has_table(db, name: str) -> bool:
    """True when the database holds table ``name`` with a committed version (follows
    pagination). A table folder that holds only fragments no version names yet (a build's
    workers wrote them; its commit never came) is no table."""
    token = None
    while True:
        page = db.list_tables(page_token=token) if token else db.list_tables()
        if name in page.tables:
            try:
                db.open_table(name)
            except ValueError:
                return False
            return True
        token = page.page_token
        if not token:
            return False


def open_pinned(db, name: str, version: int):
    """Open table ``name`` checked out at ``version`` (read-only view)."""
    t = db.open_table(name)
    t.checkout(version)
    return t
