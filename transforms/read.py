"""Reading a file of a corpus or an index through Beam's FileSystems, an ``s3://`` object in one GET."""
from __future__ import annotations

import contextlib
import errno

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems


def open_read(path: str):
    """``path`` opened for reading its bytes as stored (no decompression by file name).

    ``FileSystems.open`` for every scheme but ``s3://``: Beam's S3 filesystem asks for an
    object's metadata (a HEAD) before it reads it, a request per file that a build spends only
    to learn a size nothing needs (a document's read stops at the size limit anyway). An S3
    object is read with one GET instead, through the process's boto3 client made from the
    pipeline's S3 options as Beam makes it (shared by :mod:`pipelines.s3_clients`). A missing
    object raises ``FileNotFoundError``, as Beam's read does; any other S3 error propagates,
    so the runner retries the bundle, as it would a failed Beam read.

    Returns
    -------
    A context manager giving a binary stream with ``read(n)``.
    """
    if not path.startswith("s3://"):
        return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    from apache_beam.io.aws import s3io

    # the options Beam's own S3 filesystem for this path was made with (no public accessor)
    options = FileSystems.get_filesystem(path)._options
    client = s3io.S3IO(options=options).client.client
    bucket, key = s3io.parse_s3_path(path)
    try:
        body = client.get_object(Bucket=bucket, Key=key)["Body"]
    except client.exceptions.NoSuchKey as e:
        raise FileNotFoundError(errno.ENOENT, f"Not found: {path}") from e
    return contextlib.closing(body)
