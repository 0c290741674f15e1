"""The index manifest: the one file readers trust.

Commit protocol: every table and tantivy shard is written first; the manifest naming the
LanceDB table versions and tantivy shard folders is written last and whole (a local folder: a
temporary file fsynced and renamed over ``manifest.json``; an object store: one object, visible
once uploaded). A reader that opens the manifest sees one consistent index, old or new, never a
mix.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Optional

from schemas.errors import IndexError_
from vdgr_core.store.location import IndexLocation

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


def write_manifest(index_dir: str, manifest: Manifest) -> str:
    """Write the manifest whole (the last write of a commit); returns its path or URI."""
    loc = IndexLocation(index_dir)
    loc.write_whole(MANIFEST_NAME, manifest.to_json().encode("utf-8"))
    return loc.join(MANIFEST_NAME)


def read_manifest(index_dir: str) -> Manifest:
    loc = IndexLocation(index_dir)
    try:
        return Manifest.from_json(loc.read_bytes(MANIFEST_NAME).decode("utf-8"))
    except FileNotFoundError:
        raise IndexError_(f"no index at {index_dir!r}: {MANIFEST_NAME} is missing "
                          "(was the build interrupted before its commit?)") from None
    except (ValueError, TypeError, KeyError) as e:
        raise IndexError_(f"unreadable manifest {loc.join(MANIFEST_NAME)!r}: {e}") from e
