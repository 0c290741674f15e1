"""The index manifest: the one file readers trust.

Commit protocol: every table and tantivy shard is written first; the manifest naming the
LanceDB table versions and tantivy shard folders is written last and whole (a local folder: a
temporary file fsynced and renamed over ``manifest.json``; an object store: one object, visible
once uploaded). A reader that opens the manifest sees one consistent index, old or new, never a
mix.

Format 2 (this version) adds, for incremental updates and the query side:

* ``tantivy_shards``: per domain, its BM25 sub-shards (``sub``, ``folder``, ``n_docs``,
  ``digest``; one entry for a domain that is not split);
* ``table_digests`` and ``domain_digests``: the additive digest of each table and of each
  domain's rows of each table (vdgr_core/store/digest.py), so an update recomputes them from
  the rows it deletes and writes;
* ``graphs``: per domain, the folder of its CSR adjacency arrays (vdgr_core/store/graph_csr.py);
* ``vector_indexes``: per table, the LanceDB vector index built on its ``vector`` column.

A format-1 manifest is still read (its shards become single sub-shards, without digests).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Optional

from schemas.errors import IndexError_
from vdgr_core.store.location import IndexLocation
from vdgr_core.store.tantivy_shard import ShardInfo

MANIFEST_NAME = "manifest.json"
FORMAT_VERSION = 2
READABLE_FORMATS = (1, 2)


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
    # domain -> its BM25 sub-shards, by sub-shard number (folders relative to the index)
    tantivy_shards: dict[str, tuple[ShardInfo, ...]]
    embedding_model: str
    dim: int
    domains: tuple[DomainInfo, ...]
    counts: dict[str, int]
    config: dict = field(default_factory=dict)
    created_at: str = ""
    parent_build_id: Optional[str] = None
    table_digests: dict[str, str] = field(default_factory=dict)
    domain_digests: dict[str, dict[str, str]] = field(default_factory=dict)   # domain -> table -> hex
    subshards: dict[str, int] = field(default_factory=dict)       # domain -> BM25 sub-shard count
    graphs: dict[str, str] = field(default_factory=dict)          # domain -> CSR folder
    vector_indexes: dict[str, dict] = field(default_factory=dict)  # table -> index description
    format_version: int = FORMAT_VERSION

    def shard_folders(self, domain: str) -> list[str]:
        """The folders of ``domain``'s BM25 sub-shards (empty when it has no content)."""
        return [s.folder for s in self.tantivy_shards.get(domain, ())]

    def all_shard_folders(self) -> list[str]:
        return [s.folder for shards in self.tantivy_shards.values() for s in shards]

    @property
    def incremental(self) -> bool:
        """True when the manifest has what a row-level update needs (format 2 digests)."""
        return self.format_version >= 2 and bool(self.table_digests)

    def to_json(self) -> str:
        d = asdict(self)
        d["tantivy_shards"] = {dom: [{"sub": s.sub, "folder": s.folder, "n_docs": s.n_docs, "digest": s.digest}
                                     for s in shards] for dom, shards in self.tantivy_shards.items()}
        return json.dumps(d, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        d = json.loads(text)
        if d.get("format_version") not in READABLE_FORMATS:
            raise IndexError_(f"unsupported index format {d.get('format_version')!r}")
        d["domains"] = tuple(
            DomainInfo(**{**x, "versions": tuple(x["versions"]), "collections": tuple(x["collections"])})
            for x in d["domains"]
        )
        chunks = {x.name: x.n_chunks for x in d["domains"]}
        shards = {}
        for dom, v in d["tantivy_shards"].items():
            if isinstance(v, str):         # format 1: one shard folder per domain
                shards[dom] = (ShardInfo(dom, v, chunks.get(dom, 0), "", 0),)
            else:
                shards[dom] = tuple(ShardInfo(dom, x["folder"], x["n_docs"], x["digest"], x["sub"]) for x in v)
        d["tantivy_shards"] = shards
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
