"""The index manifest: the one file readers trust.

Commit protocol: every table and tantivy shard is written first; the manifest naming the
LanceDB table versions and tantivy shard folders is written last, to a temporary file that is
fsynced and renamed over ``manifest.json``. A reader that opens the manifest sees one
consistent index, old or new, never a mix.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Optional

from schemas.errors import IndexError_

MANIFEST_NAME = "manifest.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class DomainInfo:
    """What the router knows of a domain without reading tables."""

    name: str
    description: str = ""
    versions: tuple[str, ...] = ()
    collections: tuple[str, ...] = ()
    n_documents: int = 0
    n_chunks: int = 0


@dataclass(frozen=True)
class Manifest:
    """One consistent index: table versions, tantivy shards, model, counts."""

    build_id: str
    table_versions: dict[str, int]
    tantivy_shards: dict[str, str]          # domain -> shard folder relative to the index
    embedding_model: str
    dim: int
    domains: tuple[DomainInfo, ...]
    counts: dict[str, int]
    config: dict = field(default_factory=dict)
    created_at: str = ""
    parent_build_id: Optional[str] = None
    format_version: int = FORMAT_VERSION

    def to_json(self) -> str:
        d = asdict(self)
        return json.dumps(d, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        d = json.loads(text)
        if d.get("format_version") != FORMAT_VERSION:
            raise IndexError_(f"unsupported index format {d.get('format_version')!r}")
        d["domains"] = tuple(
            DomainInfo(**{**x, "versions": tuple(x["versions"]), "collections": tuple(x["collections"])})
            for x in d["domains"]
        )
        return cls(**d)

    def domain(self, name: str) -> DomainInfo:
        for info in self.domains:
            if info.name == name:
                return info
        raise KeyError(name)


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file in the same folder, fsync, rename."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
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


def write_manifest(index_dir: str, manifest: Manifest) -> str:
    path = os.path.join(index_dir, MANIFEST_NAME)
    atomic_write_text(path, manifest.to_json())
    return path


def read_manifest(index_dir: str) -> Manifest:
    path = os.path.join(index_dir, MANIFEST_NAME)
    try:
        with open(path, encoding="utf-8") as f:
            return Manifest.from_json(f.read())
    except FileNotFoundError:
        raise IndexError_(f"no index at {index_dir!r}: {MANIFEST_NAME} is missing "
                          "(was the build interrupted before its commit?)") from None
    except (ValueError, TypeError, KeyError) as e:
        raise IndexError_(f"unreadable manifest {path!r}: {e}") from e
