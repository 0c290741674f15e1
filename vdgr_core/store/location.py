"""Where an index lives: a local folder, or an object-store URI (``gs://``, ``s3://``, ``file://``).

Everything but the LanceDB tables (which LanceDB writes to the URI itself) goes through
``pyarrow.fs``, so one code path serves a local folder and a bucket. What differs is how a file
or folder appears whole:

* local folder: written to a temporary name, fsynced, renamed into place;
* object store: an object becomes visible only when its upload completes, and a shard folder is
  uploaded under a name nobody reads until the manifest naming it is written, after the upload.

A URI with a scheme always takes the object-store path (``file://`` too, which is how the tests
exercise it without a network).
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pyarrow.fs as pafs


def is_remote(uri: str) -> bool:
    """True for an object-store URI (any ``scheme://``)."""
    return "://" in str(uri)


def beam_path(uri: str) -> str:
    """``uri`` as Beam's FileSystems takes it: a ``file://`` URI becomes its plain path (Beam has
    no ``file`` scheme); local paths and other schemes are unchanged."""
    uri = str(uri)
    return uri[len("file://"):] if uri.startswith("file://") else uri


class IndexLocation:
    """Files of one index, addressed by paths relative to its root.

    Parameters
    ----------
    uri : str
        A local folder or an object-store URI that ``pyarrow.fs.FileSystem.from_uri`` understands.
    """

    def __init__(self, uri: str):
        self.uri = str(uri).rstrip("/")
        self.remote = is_remote(self.uri)
        if self.remote:
            self._fs, self._root = pafs.FileSystem.from_uri(self.uri)
        else:
            self._fs, self._root = pafs.LocalFileSystem(), os.path.abspath(self.uri)

    def _path(self, rel: str) -> str:
        return f"{self._root}/{rel}" if rel else self._root

    def join(self, *parts: str) -> str:
        """The URI (or local path) of ``parts`` under the index root."""
        return "/".join([self.uri, *parts]) if self.remote else os.path.join(self.uri, *parts)

    def exists(self, rel: str) -> bool:
        return self._fs.get_file_info(self._path(rel)).type != pafs.FileType.NotFound

    def read_bytes(self, rel: str) -> bytes:
        """The whole file ``rel``; FileNotFoundError if it does not exist."""
        if not self.exists(rel):
            raise FileNotFoundError(self.join(rel))
        with self._fs.open_input_stream(self._path(rel)) as f:
            return f.read()

    def write_whole(self, rel: str, data: bytes) -> None:
        """Write ``rel`` so that readers see the old content or the new, never part of it."""
        if not self.remote:
            _atomic_local_write(self._path(rel), data)
            return
        with self._fs.open_output_stream(self._path(rel)) as f:   # visible once complete
            f.write(data)

    def publish_folder(self, local_dir: str, rel: str) -> None:
        """Move the finished folder ``local_dir`` to ``rel`` (which must not exist yet)."""
        if not self.remote:
            target = self._path(rel)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(local_dir, target)
            return
        try:
            self._fs.create_dir(self._path(rel), recursive=True)
            for name in sorted(os.listdir(local_dir)):
                src = os.path.join(local_dir, name)
                if os.path.isfile(src):
                    with open(src, "rb") as f, self._fs.open_output_stream(self._path(f"{rel}/{name}")) as out:
                        shutil.copyfileobj(f, out, 1 << 20)
        finally:
            shutil.rmtree(local_dir, ignore_errors=True)

    def fetch_folder(self, rel: str, local_dir: str) -> None:
        """Copy the folder ``rel`` (flat, as a tantivy index is) into the new folder ``local_dir``."""
        os.makedirs(local_dir)
        selector = pafs.FileSelector(self._path(rel), recursive=False)
        for info in self._fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                with self._fs.open_input_stream(info.path) as f, open(os.path.join(local_dir, info.base_name), "wb") as out:
                    shutil.copyfileobj(f, out, 1 << 20)

    def local_folder(self, rel: str) -> str:
        """The local path of folder ``rel`` of a local index."""
        return self._path(rel)


def _atomic_local_write(path: str, data: bytes) -> None:
    """Temp file in the same folder, fsync, rename over ``path``, fsync the folder."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def shard_cache_dir() -> str:
    """Local folder holding copies of BM25 shards of object-store indexes (``VDGR_SHARD_CACHE``).

    Shard folders are named by the digest of their contents, so a cached copy never goes stale.
    """
    return os.environ.get("VDGR_SHARD_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "vdgr", "shards")


__all__ = ["IndexLocation", "beam_path", "is_remote", "shard_cache_dir"]
