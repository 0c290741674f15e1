"""Discover the documents of a corpus folder tree (see DESIGN.md, input corpus contract)."""
from __future__ import annotations

import functools
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Iterable, Mapping

from schemas.config import LimitsConfig
from schemas.errors import ConfigError, DeadLetterReason
from schemas.records import DeadLetter, DocMeta, DocumentTask
from vdgr_core.metadata import load_meta_yaml, merge_meta
from vdgr_core.parsing import SUPPORTED_EXTENSIONS
from vdgr_core.store.location import beam_path
from vdgr_core.store.s3_client import read_object, s3_bucket_key

META_FILE = "_meta.yaml"


@dataclass(frozen=True)
class CorpusScan:
    """The documents to index and the files left out.

    ``skipped`` lists every file that is not a task: unsupported formats, files directly in the
    root, and what the scan refused (``rejected``: names that are not UTF-8, symlinks out of the
    root or onto a folder already scanned, folders nested too deep, FIFOs and other special
    files, folders that cannot be listed), each with its typed dead-letter reason.
    """

    tasks: tuple[DocumentTask, ...]
    skipped: tuple[str, ...]
    rejected: tuple[DeadLetter, ...] = ()

    @cached_property
    def _rejected_by_path(self) -> dict[str, DeadLetter]:
        return {d.rel_path: d for d in self.rejected}

    @cached_property
    def outside_domains(self) -> tuple[str, ...]:
        """Skipped files directly in the root (in no domain folder) that the scan did not refuse."""
        return tuple(p for p in self.skipped if "/" not in p and p not in self._rejected_by_path)

    def dead_letter(self, rel_path: str) -> DeadLetter:
        """The dead letter of a skipped path: its scan rejection, a file in no domain folder, or
        an unsupported format."""
        found = self._rejected_by_path.get(rel_path)
        if found is not None:
            return found
        if "/" not in rel_path:
            return DeadLetter(rel_path, "", DeadLetterReason.OUTSIDE_DOMAIN.value,
                              "file at the corpus root is outside every domain folder")
        return DeadLetter(rel_path, rel_path.split("/", 1)[0], DeadLetterReason.UNSUPPORTED.value,
                          "no parser for this file type")
    # rel_path -> (size in bytes, mtime in ns) as listed, for the update's fingerprint check
    file_stats: Mapping[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    listed_ns: int = field(default=0, compare=False)     # when the listing started (time.time_ns)


@functools.lru_cache(maxsize=4096)
def _parse_meta(text: str) -> DocMeta:
    """``load_meta_yaml``, once per distinct text (a versioned corpus repeats its ``_meta.yaml``
    texts across folders; ``DocMeta`` is immutable, so sharing one is safe)."""
    return load_meta_yaml(text)


def _read_meta(fs, path: str, shown: str, uri: str = "") -> DocMeta:
    """The metadata of the ``_meta.yaml`` at ``path`` of ``fs``; an ``s3://`` ``uri`` of it is
    read in one request (:func:`~vdgr_core.store.s3_client.read_object`; ``pyarrow.fs`` sends
    two, a size first: 3,073 folders of the 100k bench corpus were 6,146 requests of the
    build's serial scan)."""
    try:
        data = read_object(uri) if uri else None
        if data is None:
            with fs.open_input_stream(path) as f:
                data = f.read()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{shown}: cannot read: {e}") from None
    try:
        return _parse_meta(text)
    except ConfigError as e:
        raise ConfigError(f"{shown}: {e}") from None


#: ``_meta.yaml`` files of an object-store corpus read at once: each is a request that waits on
#: the network (a local corpus is read in order)
META_READERS = 16


def _read_metas(fs, base: str, root: str, folders: list, s3: bool) -> dict:
    """Folder parts -> the DocMeta of its ``_meta.yaml``, or the ConfigError reading it raised,
    for each of ``folders``; an object store's are read :data:`META_READERS` at a time, so a
    scan waits for the slowest of each group, not for the sum of them all."""
    def one(parts):
        rel = "/".join(parts + (META_FILE,))
        try:
            return _read_meta(fs, f"{base}/{rel}", os.path.join(str(root), rel), f"s3://{base}/{rel}" if s3 else "")
        except ConfigError as e:
            return e

    if fs.type_name == "local" or len(folders) < 2:
        return {p: one(p) for p in folders}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(META_READERS, len(folders))) as pool:
        return dict(zip(folders, pool.map(one, folders)))


def _shown(name: str) -> str:
    """A file name as text: undecodable bytes (kept by ``os`` as surrogates) written ``\\xff``."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _valid_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")                 # os.fsdecode keeps undecodable bytes as surrogates
    except UnicodeEncodeError:
        return False
    return True


class _LocalTree:
    """The folders and files of a local corpus, walked under the scan rules.

    * hidden files and folders (a leading dot) are left out;
    * a symlink is followed only when its real target lies inside the corpus root; a symlinked
      folder is walked after every real folder and only if its real path was not walked yet
      (a set of visited real paths: no loop, no folder indexed twice);
    * folders deeper than ``max_depth`` are not entered;
    * names that are not UTF-8, symlinks out of the root, special files (FIFO, socket, device,
      dangling link) and folders that cannot be listed become rejections (typed dead letters).
    """

    def __init__(self, base: str, max_depth: int):
        self.base = base
        self.root_real = os.path.realpath(base)
        self.max_depth = max_depth
        self.folders: dict[tuple[str, ...], list[str]] = {(): []}
        self.rejected: list[DeadLetter] = []
        self.stats: dict[str, tuple[int, int]] = {}     # rel_path -> (size, mtime ns) of each file
        self._visited = {self.root_real}
        self._linked: list[tuple[tuple[str, ...], str, str]] = []   # (parts, path, real target)

    def walk(self) -> "_LocalTree":
        self._walk(self.base, (), self.root_real)
        while self._linked:                      # symlinked folders, after every real one
            self._linked.sort()
            parts, path, target = self._linked.pop(0)
            if target in self._visited:
                self._reject(parts, DeadLetterReason.SYMLINK_LOOP,
                             "symlink to a folder that is already scanned (a loop or a second path)")
            else:
                self._enter(parts, path, target)
        return self

    def _reject(self, parts: tuple[str, ...], reason: DeadLetterReason, detail: str) -> None:
        shown = tuple(_shown(p) for p in parts)
        self.rejected.append(DeadLetter("/".join(shown), shown[0] if len(shown) > 1 else "",
                                        reason.value, detail))

    def _inside(self, real: str) -> bool:
        return real == self.root_real or real.startswith(self.root_real.rstrip(os.sep) + os.sep)

    def _enter(self, parts: tuple[str, ...], path: str, real: str) -> None:
        if len(parts) > self.max_depth:
            self._reject(parts, DeadLetterReason.TOO_DEEP,
                         f"folder nested deeper than {self.max_depth} levels (limits.max_folder_depth)")
            return
        self._visited.add(real)
        self.folders[parts] = []
        self._walk(path, parts, real)

    def _walk(self, path: str, parts: tuple[str, ...], real: str) -> None:
        """List the folder ``path`` (``parts`` below the root), whose real path is ``real``."""
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            if parts:
                self._reject(parts, DeadLetterReason.READ_ERROR, f"cannot list folder: {e.strerror or e}")
                return
            raise ConfigError(f"cannot list the corpus root {self.base!r}: {e}") from None
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            child = parts + (name,)
            if not _valid_utf8(name):
                self._reject(child, DeadLetterReason.INVALID_NAME, "the name is not valid UTF-8")
                continue
            try:
                self._entry(entry, child, real)
            except OSError as e:
                self._reject(child, DeadLetterReason.READ_ERROR, f"cannot stat: {e.strerror or e}")

    def _file(self, child: tuple[str, ...], st: os.stat_result) -> None:
        self.folders[child[:-1]].append(child[-1])
        self.stats["/".join(child)] = (int(st.st_size), int(st.st_mtime_ns))

    def _entry(self, entry: os.DirEntry, child: tuple[str, ...], parent_real: str) -> None:
        if entry.is_symlink():
            real = os.path.realpath(entry.path)
            if not self._inside(real):
                self._reject(child, DeadLetterReason.OUTSIDE_ROOT, "symlink to a path outside the corpus root")
            elif os.path.isdir(real):
                self._linked.append((child, entry.path, real))
            elif os.path.isfile(real):
                self._file(child, os.stat(real))
            else:
                self._reject(child, DeadLetterReason.NOT_REGULAR, "dangling symlink or special file")
        elif entry.is_dir(follow_symlinks=False):
            # not a link, in a folder whose real path is known: no realpath() walk of every
            # component (an lstat each) per folder
            self._enter(child, entry.path, os.path.join(parent_real, entry.name))
        elif entry.is_file(follow_symlinks=False):
            self._file(child, entry.stat(follow_symlinks=False))
        else:
            self._reject(child, DeadLetterReason.NOT_REGULAR, "not a regular file (FIFO, socket or device)")


def _list_tree(root: str, max_depth: int):
    """(filesystem, root path, {folder parts: sorted file names}, rejections, file stats) of a
    corpus; file stats map each file's rel_path to (size in bytes, mtime in ns).

    A local folder (or ``file://`` URI) is walked by :class:`_LocalTree`; an object store is
    listed through ``pyarrow.fs`` (no symlinks there; keys are UTF-8), with the same depth
    bound. Hidden folders and everything under them are left out, as are hidden files.
    """
    import pyarrow.fs as pafs

    local = beam_path(root)
    if "://" not in local:
        base = os.path.abspath(local)
        if not os.path.isdir(base):
            raise ConfigError(f"corpus root {root!r} is not a folder")
        tree = _LocalTree(base, max_depth).walk()
        return (pafs.LocalFileSystem(), base, {k: sorted(v) for k, v in tree.folders.items()},
                tuple(tree.rejected), tree.stats)
    fs, base = pafs.FileSystem.from_uri(root)
    info = fs.get_file_info(base)
    if info.type != pafs.FileType.Directory:
        raise ConfigError(f"corpus root {root!r} is not a folder")
    base = base.rstrip("/")
    folders: dict[tuple[str, ...], list[str]] = {(): []}
    too_deep: set[tuple[str, ...]] = set()
    stats: dict[str, tuple[int, int]] = {}
    for entry in fs.get_file_info(pafs.FileSelector(base, recursive=True)):
        parts = tuple(entry.path[len(base) + 1:].split("/"))
        if any(p.startswith(".") for p in parts):
            continue
        depth = len(parts) if entry.type == pafs.FileType.Directory else len(parts) - 1
        if depth > max_depth:
            too_deep.add(parts[:max_depth + 1])
            continue
        if entry.type == pafs.FileType.Directory:
            folders.setdefault(parts, [])
        elif entry.type == pafs.FileType.File:
            for i in range(len(parts)):          # object stores have no folder entries
                folders.setdefault(parts[:i], [])
            folders[parts[:-1]].append(parts[-1])
            stats["/".join(parts)] = (int(entry.size or 0), int(entry.mtime_ns or 0))
    rejected = tuple(DeadLetter("/".join(p), p[0], DeadLetterReason.TOO_DEEP.value,
                                f"folder nested deeper than {max_depth} levels (limits.max_folder_depth)")
                     for p in sorted(too_deep))
    return fs, base, {k: sorted(v) for k, v in folders.items()}, rejected, stats


def scan_corpus(root: str, supported: Iterable[str] = SUPPORTED_EXTENSIONS,
                max_depth: int = LimitsConfig().max_folder_depth) -> CorpusScan:
    """Walk a corpus folder and describe every document to index.

    Parameters
    ----------
    root:
        Corpus root (a local folder or an object-store URI such as ``gs://bucket/corpus``);
        each top-level folder is a domain.
    supported:
        File extensions (with the dot) that can be parsed.
    max_depth:
        Folders deeper than this below the root (a domain is depth 1) are not scanned.

    Returns
    -------
    CorpusScan
        Tasks sorted by ``rel_path``; ``skipped`` lists unsupported files, files directly in
        the root and what the scan refused (``rejected``, with reasons; see ``_LocalTree``).
        Hidden files and ``_meta.yaml`` never appear. Nothing outside the root is listed or read.

    Raises
    ------
    ConfigError
        When ``root`` is not a folder, or a ``_meta.yaml`` is malformed, unreadable or a
        symlink out of the root (the message names the file): metadata may carry an ACL, so a
        build never goes on without it.
    """
    listed_ns = time.time_ns()
    fs, base, folders, rejected, stats = _list_tree(root, max_depth)
    for d in rejected:
        if d.rel_path.rsplit("/", 1)[-1] == META_FILE:
            raise ConfigError(f"{os.path.join(str(root), d.rel_path)}: cannot read: {d.detail}")
    corpus_root = beam_path(root)                   # workers read documents through Beam
    s3 = s3_bucket_key(str(root)) is not None
    exts = {e.lower() for e in supported}
    metas = _read_metas(fs, base, root, [p for p in folders if p and META_FILE in folders[p]], s3)
    own: dict[tuple[str, ...], DocMeta] = {}        # folder parts -> its own _meta.yaml
    resolved: dict[tuple[str, ...], DocMeta] = {}   # folder parts -> meta resolved down to it
    tasks: list[DocumentTask] = []
    skipped: list[str] = []
    for parts in sorted(folders):                   # parents before children
        filenames = folders[parts]
        if parts:
            got = metas.get(parts, DocMeta())
            if isinstance(got, ConfigError):
                raise got                           # the first folder's error, in scan order
            own[parts] = got
            parent = resolved.get(parts[:-1], DocMeta()) if len(parts) > 1 else DocMeta()
            resolved[parts] = replace(merge_meta(replace(parent, title=None), own[parts]),
                                      title=own[parts].title)
        for name in filenames:
            if name.startswith(".") or name == META_FILE:
                continue
            rel_path = "/".join(parts + (name,))
            if not parts or os.path.splitext(name)[1].lower() not in exts:
                skipped.append(rel_path)
                continue
            folders_below = parts[1:]
            tasks.append(DocumentTask(
                corpus_root=corpus_root,
                rel_path=rel_path,
                domain=parts[0],
                collection=folders_below[0] if folders_below else "",
                folder_titles=tuple(own[parts[:i + 1]].title or parts[i] for i in range(1, len(parts))),
                meta=replace(resolved[parts], title=None),
                folder_metas=tuple(resolved[parts[:i + 1]] for i in range(len(parts))),
            ))
    tasks.sort(key=lambda t: t.rel_path)
    skipped.extend(d.rel_path for d in rejected)
    return CorpusScan(tasks=tuple(tasks), skipped=tuple(sorted(skipped)),
                      rejected=tuple(sorted(rejected, key=lambda d: d.rel_path)),
                      file_stats=stats, listed_ns=listed_ns)


def task_to_json(task: DocumentTask) -> str:
    """One line of a task manifest (the file workers read the build's tasks from)."""
    return json.dumps(asdict(task), sort_keys=True, ensure_ascii=False)


def _meta_from(d: dict) -> DocMeta:
    return DocMeta(version=d["version"], acl=tuple(d["acl"]), title=d["title"],
                   labels=tuple(tuple(x) for x in d["labels"]))


def task_from_json(line: str) -> DocumentTask:
    """The DocumentTask a :func:`task_to_json` line describes."""
    d = json.loads(line)
    return DocumentTask(corpus_root=d["corpus_root"], rel_path=d["rel_path"], domain=d["domain"],
                        collection=d["collection"], folder_titles=tuple(d["folder_titles"]),
                        meta=_meta_from(d["meta"]),
                        folder_metas=tuple(_meta_from(m) for m in d["folder_metas"]))
