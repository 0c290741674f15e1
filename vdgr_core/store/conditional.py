"""Conditional create of one object: written only if no object has its name, decided by the store.

Two writers racing for the same manifest generation must not both succeed. ``pyarrow.fs`` has no
``If-None-Match``, so the object stores' own clients make the decision:

* ``s3://``: boto3 ``put_object(..., IfNoneMatch="*")`` (HTTP 412 ``PreconditionFailed`` or 409
  ``ConditionalRequestConflict`` for the loser). Endpoint, credentials and region come from the
  usual AWS environment (``AWS_ENDPOINT_URL`` etc.), which pyarrow reads too; one client a
  process (:mod:`vdgr_core.store.s3_client`).
* ``gs://``: google-cloud-storage ``upload_from_string(..., if_generation_match=0)`` (HTTP 412).

:func:`conditional_create` returns None for any other scheme, for a URI with a query string (its
options are ``pyarrow.fs``'s), or when the client library is not installed (install the ``s3``
or ``gcs`` extra); the caller then falls back to
check-write-read-back and says so once in the log.
"""
from __future__ import annotations

import logging
import os
from typing import Optional
from urllib.parse import urlsplit

from vdgr_core.store.s3_client import s3_bucket_key, s3_client

log = logging.getLogger("vdgr.store")

_S3_LOST = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}


def conditional_create(uri: str, data: bytes) -> Optional[bool]:
    """Create the object ``uri`` holding ``data`` unless one exists.

    Returns
    -------
    bool or None
        True: this call created it; False: an object of that name exists (another writer won);
        None: no conditional create is available for this URI (unknown scheme, options in a
        query string, client missing).
    """
    if (where := s3_bucket_key(uri)) is not None:
        return _s3_create(*where, data)
    parts = urlsplit(uri)
    if parts.scheme in ("gs", "gcs") and parts.netloc and not parts.query:
        return _gcs_create(parts.netloc, parts.path.lstrip("/"), data)
    return None


def _s3_create(bucket: str, key: str, data: bytes) -> Optional[bool]:
    client = s3_client()
    if client is None:
        return None
    from botocore.exceptions import ClientError

    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except ClientError as exc:
        err = exc.response.get("Error", {})
        status = str(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        if err.get("Code") in _S3_LOST or status in _S3_LOST:
            return False
        raise
    return True


def _gcs_create(bucket: str, key: str, data: bytes) -> Optional[bool]:
    try:
        from google.api_core.exceptions import PreconditionFailed
        from google.cloud import storage
    except ImportError:
        return None
    try:
        _gcs_client(storage).bucket(bucket).blob(key).upload_from_string(data, if_generation_match=0)
    except PreconditionFailed:
        return False
    return True


_GCS_CLIENTS: dict[tuple, object] = {}


def _gcs_client(storage):
    """One google-cloud-storage client a process and environment (making one finds credentials)."""
    key = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(("GOOGLE_", "CLOUDSDK_", "STORAGE_"))))
    if key not in _GCS_CLIENTS:
        _GCS_CLIENTS[key] = storage.Client()
    return _GCS_CLIENTS[key]
