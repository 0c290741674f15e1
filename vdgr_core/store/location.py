"""Where an index lives: a local folder, or an object-store URI (``gs://``, ``s3://``, ``file://``).

Everything but the LanceDB tables (which LanceDB writes to the URI itself) goes through
``pyarrow.fs``, so one code path serves a local folder and a bucket. What differs is how a file
or folder appears whole:

* local folder: written to a temporary name, fsynced, renamed into place;
* object store: an object becomes visible only when its upload completes; a folder (a BM25
  shard) is complete only once its completion marker ``_complete.json`` exists, which lists
  every file and its size and is uploaded after them. Readers and writers require the marker:
  an interrupted upload leaves a folder without one, which a later run uploads again and no
  reader opens.

A URI with a scheme always takes the object-store path (``file://`` too, which is how the tests
exercise it without a network).
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import tempfile
import threading
from typing import Callable, Optional, Sequence, Union

import pyarrow.fs as pafs

from schemas.errors import IndexError_
from vdgr_core.store.failpoints import failpoint

COMPLETE_MARKER = "_complete.json"      # last object of a published folder: its file list


def safe_name(name: str) -> str:
    """``name`` (a domain) as a folder name: characters other than letters, digits, ``_.-``
    replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def is_remote(uri: str) -> bool:
    """True for an object-store URI (any ``scheme://``)."""
    return "://" in str(uri)


def beam_path(uri: str) -> str:
    """``uri`` as Beam's FileSystems takes it: a ``file://`` URI becomes its plain path (Beam has
    no ``file`` scheme); local paths and other schemes are unchanged."""
    uri = str(uri)
    return uri[len("file://"):] if uri.startswith("file://") else uri


_WARNED: set[str] = set()


def _warn_best_effort(uri: str) -> None:
    scheme = uri.split("://", 1)[0]
    if scheme not in _WARNED:
        _WARNED.add(scheme)
        import logging

        logging.getLogger("vdgr.store").warning(
            "no conditional create for %s:// (install the s3 or gcs extra): a manifest generation is "
            "checked, written and read back, which two writers racing in the same instant can both pass",
            scheme)


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
            self._fs, self._root = _remote_filesystem(self.uri)
        else:
            self._fs, self._root = pafs.LocalFileSystem(), os.path.abspath(self.uri)

    def _path(self, rel: str) -> str:
        return f"{self._root}/{rel}" if rel else self._root

    def join(self, *parts: str) -> str:
        """The URI (or local path) of ``parts`` under the index root; a root URI's query string
        (``s3://bucket/index?endpoint_override=...``: options for ``pyarrow.fs``) stays at the end.

        Examples
        --------
        >>> IndexLocation.join_uri("s3://bucket/index?region=eu-west-1", "manifests", "m.json")
        's3://bucket/index/manifests/m.json?region=eu-west-1'
        """
        return self.join_uri(self.uri, *parts) if self.remote else os.path.join(self.uri, *parts)

    @staticmethod
    def join_uri(uri: str, *parts: str) -> str:
        """``parts`` under the object-store URI ``uri``, its query string kept at the end."""
        base, sep, query = uri.partition("?")
        return "/".join([base.rstrip("/"), *parts]) + sep + query

    def exists(self, rel: str) -> bool:
        return self._fs.get_file_info(self._path(rel)).type != pafs.FileType.NotFound

    def read_bytes(self, rel: str) -> bytes:
        """The whole file ``rel``; FileNotFoundError if it does not exist."""
        if not self.exists(rel):
            raise FileNotFoundError(self.join(rel))
        with self._fs.open_input_stream(self._path(rel)) as f:
            return f.read()

    def write_whole(self, rel: str, data: bytes, before_publish: Optional[Callable[[], None]] = None) -> None:
        """Write ``rel`` so that readers see the old content or the new, never part of it.

        ``before_publish`` is called once the data is durable under a temporary name, just before
        it replaces ``rel`` (a failpoint hook)."""
        if not self.remote:
            _atomic_local_write(self._path(rel), data, before_publish)
            return
        if before_publish is not None:
            before_publish()
        self._parent_folder(rel)
        with self._fs.open_output_stream(self._path(rel)) as f:   # visible once complete
            f.write(data)

    def write_missing(self, files: dict[str, bytes]) -> int:
        """Write each ``rel -> data`` of ``files`` that does not exist yet, up to
        :data:`FOLDER_TRANSFER_THREADS` at once (content-addressed files: one that exists holds
        the same bytes). Returns how many were written.

        On S3 and GCS each file is one conditional create (the store decides "unless it
        exists"): one request, where a check through ``pyarrow.fs`` costs two for a missing
        file (a ``HEAD``, then a ``LIST`` for a folder of that name) before the upload."""
        written: list[str] = []

        def put(rel: str) -> None:
            if self.remote:
                from vdgr_core.store.conditional import conditional_create

                created = conditional_create(self.join(rel), files[rel])
                if created is not None:
                    if created:
                        written.append(rel)
                    return
            if not self.exists(rel):
                self.write_whole(rel, files[rel])
                written.append(rel)

        _each_in_threads(put, list(files))
        return len(written)

    def _parent_folder(self, rel: str) -> None:
        """A ``file://`` "bucket" needs the folders an object store does without."""
        if self._fs.type_name == "local":
            self._fs.create_dir(os.path.dirname(self._path(rel)), recursive=True)

    def create_if_absent(self, rel: str, data: bytes) -> bool:
        """Create ``rel`` holding ``data`` unless it exists; True when this call created it.

        Local and ``file://``: exclusive (a hard link of a fsynced temporary file). S3 and GCS:
        the store's own conditional create (:mod:`vdgr_core.store.conditional`), so of two
        writers racing for one name exactly one wins. Other stores, or without the store's
        client library: checked, written, then read back, as close as ``pyarrow.fs`` allows (it
        has no ``If-None-Match``): two writers racing in the same instant can both see their
        own bytes (logged once).
        """
        if not self.remote:
            return _exclusive_local_write(self._path(rel), data)
        if self.uri.startswith("file://"):
            return _exclusive_local_write(self._path(rel), data)
        from vdgr_core.store.conditional import conditional_create

        created = conditional_create(self.join(rel), data)
        if created is not None:
            return created
        _warn_best_effort(self.uri)
        if self.exists(rel):
            return False
        self._parent_folder(rel)
        with self._fs.open_output_stream(self._path(rel)) as f:
            f.write(data)
        return self.read_bytes(rel) == data

    def delete(self, rel: str) -> None:
        """Remove the file ``rel`` (nothing if it is absent)."""
        try:
            self._fs.delete_file(self._path(rel))
        except FileNotFoundError:
            pass

    def list_names(self, rel: str) -> list[str]:
        """Names of the files directly in folder ``rel`` (empty when it does not exist)."""
        if not self.exists(rel):
            return []
        infos = self._fs.get_file_info(pafs.FileSelector(self._path(rel), recursive=False))
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)

    def folder_complete(self, rel: str) -> bool:
        """True when folder ``rel`` was published whole (local: it exists, being renamed into
        place whole; object store: its completion marker exists)."""
        return self.exists(f"{rel}/{COMPLETE_MARKER}" if self.remote else rel)

    def publish_folder(self, local_dir: str, rel: str) -> None:
        """Publish the finished folder ``local_dir`` (flat) whole at ``rel``; ``local_dir`` is gone after.

        Local: renamed into place. Object store: every file uploaded, then the completion marker.
        A folder already complete at ``rel`` (another run published the same content: folders
        are named by their content) is kept and ``local_dir`` discarded.
        """
        try:
            files = {name: os.path.getsize(os.path.join(local_dir, name))
                     for name in sorted(os.listdir(local_dir)) if os.path.isfile(os.path.join(local_dir, name))}
            marker = json.dumps({"files": files}, sort_keys=True).encode("utf-8")
            if not self.remote:
                with open(os.path.join(local_dir, COMPLETE_MARKER), "wb") as f:
                    f.write(marker)
                target = self._path(rel)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                try:
                    os.replace(local_dir, target)
                except OSError:
                    if not os.path.isdir(target):
                        raise                  # not "published meanwhile": a real failure
                return
            if self.folder_complete(rel):
                return
            if self._fs.type_name == "local":
                self._fs.create_dir(self._path(rel), recursive=True)

            def upload(name: str) -> None:
                with open(os.path.join(local_dir, name), "rb") as f, \
                        self._fs.open_output_stream(self._path(f"{rel}/{name}")) as out:
                    shutil.copyfileobj(f, out, 1 << 20)

            _each_in_threads(upload, list(files))
            failpoint("store.folder_uploaded_without_marker")
            with self._fs.open_output_stream(self._path(f"{rel}/{COMPLETE_MARKER}")) as out:
                out.write(marker)
        finally:
            shutil.rmtree(local_dir, ignore_errors=True)

    def fetch_folder(self, rel: str, local_dir: str) -> None:
        """Copy the complete folder ``rel`` into the new folder ``local_dir``.

        Object store: exactly the files its completion marker lists, sizes checked.

        Raises
        ------
        IndexError_
            When ``rel`` has no completion marker (an interrupted upload) or a listed file is
            missing or of another size.
        """
        os.makedirs(local_dir)
        try:
            files = json.loads(self.read_bytes(f"{rel}/{COMPLETE_MARKER}").decode("utf-8"))["files"]
        except FileNotFoundError:
            raise IndexError_(f"{self.join(rel)} is incomplete (no {COMPLETE_MARKER}): "
                              "its upload was interrupted") from None

        def fetch(name: str) -> None:
            target = os.path.join(local_dir, name)
            try:
                with self._fs.open_input_stream(self._path(f"{rel}/{name}")) as f, open(target, "wb") as out:
                    shutil.copyfileobj(f, out, 1 << 20)
            except FileNotFoundError:
                raise IndexError_(f"{self.join(rel, name)} is missing from a published folder") from None
            if os.path.getsize(target) != files[name]:
                raise IndexError_(f"{self.join(rel, name)} has {os.path.getsize(target)} bytes, "
                                  f"its completion marker says {files[name]}")

        _each_in_threads(fetch, sorted(files))

    def local_folder(self, rel: str) -> str:
        """The local path of folder ``rel`` of a local index."""
        return self._path(rel)


#: files of one folder uploaded or fetched at once: an object store answers each request in
#: milliseconds, and a BM25 shard or a layout is tens of small files
FOLDER_TRANSFER_THREADS = 8


def _each_in_threads(fn: Callable[[str], None], names: list[str]) -> None:
    """``fn(name)`` for every name, up to :data:`FOLDER_TRANSFER_THREADS` at once; the first
    error is raised once all have ended."""
    if len(names) <= 1:
        for name in names:
            fn(name)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(FOLDER_TRANSFER_THREADS, len(names))) as pool:
        futures = [pool.submit(fn, name) for name in names]
    for f in futures:
        f.result()


_FILESYSTEMS: dict[tuple, tuple] = {}
_FILESYSTEMS_LOCK = threading.Lock()


def _remote_filesystem(uri: str) -> tuple:
    """``pyarrow.fs.FileSystem.from_uri`` of ``uri`` (with :func:`_with_fs_options`), made once
    per URI and AWS environment in this process: making one resolves the bucket's region with a
    request (1.6 s of a 10k-chunk commit to S3 went there, once per domain). Arrow's file systems
    are safe to share between threads."""
    key = (uri, tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_"))))
    with _FILESYSTEMS_LOCK:
        got = _FILESYSTEMS.get(key)
    if got is None:
        got = pafs.FileSystem.from_uri(_with_fs_options(uri))
        with _FILESYSTEMS_LOCK:
            got = _FILESYSTEMS.setdefault(key, got)
    return got


#: how long a GCS request is retried (``pyarrow.fs``'s ``retry_limit_seconds``; its client's own
#: default is 15 minutes, so a build without credentials, or offline, seemed to hang)
GCS_RETRY_LIMIT_S = 60


def _with_fs_options(uri: str) -> str:
    """``uri`` with the ``pyarrow.fs`` options an object store gets, unless it names them: for S3,
    ``allow_delayed_open`` (an object smaller than one part is one ``PutObject``, not a
    multipart upload's three requests; an error shows at ``close``, which every write here
    reaches); for GCS, ``retry_limit_seconds`` (:data:`GCS_RETRY_LIMIT_S`)."""
    if uri.startswith("s3://") and "allow_delayed_open=" not in uri:
        return uri + ("&" if "?" in uri else "?") + "allow_delayed_open=true"
    if uri.startswith(("gs://", "gcs://")) and "retry_limit_seconds=" not in uri:
        return uri + ("&" if "?" in uri else "?") + f"retry_limit_seconds={GCS_RETRY_LIMIT_S}"
    return uri


def _fsynced_temp(folder: str, data: bytes) -> str:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def fsync_folder(folder: str) -> None:
    """Make the entries of ``folder`` (names created, renamed, removed) durable."""
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


_LIBC = None


def libc():
    """The C library through ctypes (``syncfs``, ``mmap``, ``munmap``), loaded once; None where
    it cannot be loaded."""
    global _LIBC
    if _LIBC is None:
        try:
            import ctypes.util

            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        except OSError:
            _LIBC = False
    return _LIBC or None


def _syncfs(fd: int) -> bool:
    """``syncfs(2)`` on ``fd``'s filesystem (Linux); False where it is not available."""
    lib = libc()
    fn = getattr(lib, "syncfs", None) if lib is not None else None
    return fn is not None and fn(ctypes.c_int(fd)) == 0


SYNCFS_MIN_FILES = 64      # from this many files one syncfs, below it an fsync of each


def make_durable(paths: list[str], folder: Union[str, Sequence[str]]) -> None:
    """Make the written files ``paths`` durable, and the entries of ``folder`` (one folder, or
    several: the folders holding ``paths``).

    Many files: one ``syncfs`` of their filesystem where the platform has it (one journal
    commit for all of them: at 1M chunks a build writes ~17,000 vector blocks, and an fsync
    each cost ~2 ms here). A few: an ``fsync`` of each (a ``syncfs`` costs ~20 ms however
    little is dirty, and flushes whatever else the filesystem holds)."""
    if not paths:
        return
    folders = [folder] if isinstance(folder, str) else list(folder)
    dir_fd = os.open(folders[0], os.O_RDONLY)
    try:
        if len(paths) >= SYNCFS_MIN_FILES and _syncfs(dir_fd):
            return
    finally:
        os.close(dir_fd)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for each in folders:
        fsync_folder(each)


def _exclusive_local_write(path: str, data: bytes) -> bool:
    """Create ``path`` whole with ``data`` unless it exists (a hard link never replaces)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    tmp = _fsynced_temp(folder, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    fsync_folder(folder)
    return True


def _atomic_local_write(path: str, data: bytes, before_publish: Optional[Callable[[], None]] = None) -> None:
    """Temp file in the same folder, fsync, rename over ``path``, fsync the folder."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    tmp = _fsynced_temp(folder, data)
    try:
        if before_publish is not None:
            before_publish()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_folder(folder)


def shard_cache_dir() -> str:
    """Local folder holding copies of BM25 shards of object-store indexes (``VDGR_SHARD_CACHE``).

    Shard folders are named by the digest of their contents, so a cached copy never goes stale.
    """
    return os.environ.get("VDGR_SHARD_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "vdgr", "shards")


__all__ = ["IndexLocation", "beam_path", "fsync_folder", "is_remote", "libc", "make_durable", "safe_name",
           "shard_cache_dir"]
