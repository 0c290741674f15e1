"""Discover the documents of a corpus folder tree (see DESIGN.md, input corpus contract)."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Iterable

from schemas.errors import ConfigError
from schemas.records import DocMeta, DocumentTask
from vdgr_core.metadata import load_meta_yaml, merge_meta
from vdgr_core.parsing import SUPPORTED_EXTENSIONS

META_FILE = "_meta.yaml"


@dataclass(frozen=True)
class CorpusScan:
    """The documents to index and the files left out because of their format."""

    tasks: tuple[DocumentTask, ...]
    skipped: tuple[str, ...]


def _read_meta(path: str) -> DocMeta:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {e}") from None
    try:
        return load_meta_yaml(text)
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def scan_corpus(root: str, supported: Iterable[str] = SUPPORTED_EXTENSIONS) -> CorpusScan:
    """Walk a corpus folder and describe every document to index.

    Parameters
    ----------
    root:
        Corpus root; each top-level folder is a domain.
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
    if not os.path.isdir(root):
        raise ConfigError(f"corpus root {root!r} is not a folder")
    exts = {e.lower() for e in supported}
    own: dict[tuple[str, ...], DocMeta] = {}        # folder parts -> its own _meta.yaml
    resolved: dict[tuple[str, ...], DocMeta] = {}   # folder parts -> meta resolved down to it
    tasks: list[DocumentTask] = []
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        rel_dir = os.path.relpath(dirpath, root)
        parts = () if rel_dir == "." else tuple(rel_dir.replace(os.sep, "/").split("/"))
        if parts:
            meta_path = os.path.join(dirpath, META_FILE)
            own[parts] = _read_meta(meta_path) if META_FILE in filenames else DocMeta()
            parent = resolved.get(parts[:-1], DocMeta()) if len(parts) > 1 else DocMeta()
            resolved[parts] = replace(merge_meta(replace(parent, title=None), own[parts]),
                                      title=own[parts].title)
        for name in sorted(filenames):
            if name.startswith(".") or name == META_FILE:
                continue
            rel_path = "/".join(parts + (name,))
            if not parts or os.path.splitext(name)[1].lower() not in exts:
                skipped.append(rel_path)
                continue
            folders = parts[1:]
            tasks.append(DocumentTask(
                corpus_root=root,
                rel_path=rel_path,
                domain=parts[0],
                collection=folders[0] if folders else "",
                folder_titles=tuple(own[parts[:i + 1]].title or parts[i] for i in range(1, len(parts))),
                meta=replace(resolved[parts], title=None),
                folder_metas=tuple(resolved[parts[:i + 1]] for i in range(len(parts))),
            ))
    tasks.sort(key=lambda t: t.rel_path)
    return CorpusScan(tasks=tuple(tasks), skipped=tuple(sorted(skipped)))
