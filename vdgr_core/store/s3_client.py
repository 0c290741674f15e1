"""One boto3 S3 client a process, for the requests ``pyarrow.fs`` spends two or three on.

``pyarrow.fs`` asks an object's size (a ``HEAD``) before it reads it, and a missing object is
looked for as a folder too (a ``LIST``): reading a small file costs two requests, and "write
this content-addressed file unless it exists" three. Where one request does (a ``GetObject``;
a ``PutObject`` with ``If-None-Match``), the callers use this client. Endpoint, credentials and
region come from the usual AWS environment (``AWS_ENDPOINT_URL`` etc.), which pyarrow reads too.
Making a client costs milliseconds of CPU, so one is made per process and AWS environment;
boto3 clients are safe to share between threads.
"""
from __future__ import annotations

import os
import threading
from typing import Optional
from urllib.parse import urlsplit

_CLIENTS: dict[tuple, object] = {}
_LOCK = threading.Lock()


def s3_client():
    """The process's boto3 S3 client for the current AWS environment; None without boto3."""
    try:
        import boto3
    except ImportError:
        return None
    key = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
    with _LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = boto3.session.Session().client("s3")
    return client


def s3_bucket_key(uri: str) -> Optional[tuple[str, str]]:
    """(bucket, key) of a plain ``s3://bucket/key`` URI; None for any other (another scheme, or
    options in a query string, which only ``pyarrow.fs`` reads)."""
    parts = urlsplit(str(uri))
    if parts.scheme != "s3" or parts.query or not parts.netloc:
        return None
    return parts.netloc, parts.path.lstrip("/")


def read_object(uri: str) -> Optional[bytes]:
    """The bytes of the object ``uri`` in one ``GetObject``; None when this client cannot read
    it (not a plain ``s3://`` URI, or no boto3): read it through ``pyarrow.fs`` then.

    Raises
    ------
    FileNotFoundError
        No object has that name.
    OSError
        Any other failure of the request.
    """
    where = s3_bucket_key(uri)
    client = s3_client() if where else None
    if client is None:
        return None
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        body = client.get_object(Bucket=where[0], Key=where[1])["Body"]
        try:
            return body.read()
        finally:
            body.close()
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("NoSuchKey", "404", "NotFound"):
            raise FileNotFoundError(uri) from None
        raise OSError(f"{uri}: {code or exc}") from None
    except BotoCoreError as exc:
        raise OSError(f"{uri}: {exc}") from None


__all__ = ["read_object", "s3_bucket_key", "s3_client"]
