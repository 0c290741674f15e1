"""Discover the documents of a corpus folder tree (see DESIGN.md, input corpus contract)."""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Iterable, Mapping

from schemas.errors import ConfigError
from schemas.records import DocMeta, DocumentTask
from vdgr_core.metadata import load_meta_yaml, merge_meta
from vdgr_core.parsing import SUPPORTED_EXTENSIONS
from vdgr_core.store.location import beam_path

META_FILE = "_meta.yaml"


@dataclass(frozen=True)
class CorpusScan:
    """The documents to index and the files left out because of their format."""

    tasks: tuple[DocumentTask, ...]
    skipped: tuple[str, ...]
    # rel_path -> (size in bytes, mtime in ns) as listed, for the update's fingerprint check
    file_stats: Mapping[str, tuple[int, int]] = field(default_factory=dict, compare=False)
    listed_ns: int = field(default=0, compare=False)     # when the listing started (time.time_ns)


def _read_meta(fs, path: str, shown: str) -> DocMeta:
    try:
        with fs.open_input_stream(path) as f:
            text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{shown}: cannot read: {e}") from None
    try:
        return load_meta_yaml(text)
    except ConfigError as e:
        raise ConfigError(f"{shown}: {e}") from None


def _list_tree(root: str):
    """(filesystem, root path, {folder parts: sorted file names}) of a local folder or a URI.

    Hidden folders and everything under them are left out, as are hidden files.
    """
    import pyarrow.fs as pafs

    if "://" in root:
        fs, base = pafs.FileSystem.from_uri(root)
    else:
        fs, base = pafs.LocalFileSystem(), os.path.abspath(root)
    info = fs.get_file_info(base)
    if info.type != pafs.FileType.Directory:
        raise ConfigError(f"corpus root {root!r} is not a folder")
    base = base.rstrip("/")
    folders: dict[tuple[str, ...], list[str]] = {(): []}
    stats: dict[str, tuple[int, int]] = {}
    for entry in fs.get_file_info(pafs.FileSelector(base, recursive=True)):
        parts = tuple(entry.path[len(base) + 1:].split("/"))
        if any(p.startswith(".") for p in parts):
            continue
        if entry.type == pafs.FileType.Directory:
            folders.setdefault(parts, [])
        elif entry.type == pafs.FileType.File:
            for i in range(len(parts)):          # object stores have no folder entries
                folders.setdefault(parts[:i], [])
            folders[parts[:-1]].append(parts[-1])
            stats["/".join(parts)] = (int(entry.size or 0), int(entry.mtime_ns or 0))
    return fs, base, {k: sorted(v) for k, v in folders.items()}, stats


def scan_corpus(root: str, supported: Iterable[str] = SUPPORTED_EXTENSIONS) -> CorpusScan:
    """Walk a corpus folder and describe every document to index.

    Parameters
    ----------
    root:
        Corpus root (a local folder or an object-store URI such as ``gs://bucket/corpus``);
        each top-level folder is a domain.
    supported:
        File extensions (with the dot) that can be parsed.

    Returns
    -------
    CorpusScan
        Tasks sorted by ``rel_path``; ``skipped`` lists unsupported files and files
        directly in the root (hidden files and ``_meta.yaml`` never appear).

    Raises
    ------
    ConfigError
        When ``root`` is not a folder or a ``_meta.yaml`` is malformed (the message
        names the file).
    """
    listed_ns = time.time_ns()
    fs, base, folders, stats = _list_tree(root)
    corpus_root = beam_path(root)                   # workers read documents through Beam
    exts = {e.lower() for e in supported}
    own: dict[tuple[str, ...], DocMeta] = {}        # folder parts -> its own _meta.yaml
    resolved: dict[tuple[str, ...], DocMeta] = {}   # folder parts -> meta resolved down to it
    tasks: list[DocumentTask] = []
    skipped: list[str] = []
    for parts in sorted(folders):                   # parents before children
        filenames = folders[parts]
        if parts:
            rel_meta = "/".join(parts + (META_FILE,))
            own[parts] = (_read_meta(fs, f"{base}/{rel_meta}", os.path.join(str(root), rel_meta))
                          if META_FILE in filenames else DocMeta())
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
    return CorpusScan(tasks=tuple(tasks), skipped=tuple(sorted(skipped)), file_stats=stats, listed_ns=listed_ns)


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
