"""The index manifest: the one file readers trust.

Commit protocol: every table and tantivy shard is written first; the manifest naming the
LanceDB table versions and tantivy shard folders is written last and whole (a local folder: a
temporary file fsynced and renamed over ``manifest.json``; an object store: one object, visible
once uploaded). A reader that opens the manifest sees one consistent index, old or new, never a
mix.

Generations. Every manifest carries a ``generation``, one more than the manifest it replaces
(an index written before generations counts as 0). ``write_manifest`` refuses
(:class:`ConcurrentCommitError`) to replace a manifest whose generation moved since the writer
read it, so no commit (``gc``'s included) ever replaces a newer manifest. The generation it
expects comes from its caller, explicitly: ``expect_generation``, or ``guard=`` a
:class:`CommitGuard` (the held index lock of ``store/lock.py`` is one: the generation it saw
when it was taken). Every writer that commits under the lock is handed it and passes it; this
module keeps no registry of guards and does not import the lock. On an object store each
generation is also its own object, ``manifests/<generation>.json``, created only if absent and
read back (a conditional create, as far as ``pyarrow.fs`` allows: see ``store/lock.py``);
readers take the highest generation there, and ``manifest.json`` is a copy for tools.

Format 2 (this version) adds, for incremental updates and the query side:

* ``tantivy_shards``: per domain, its BM25 sub-shards (``sub``, ``folder``, ``n_docs``,
  ``digest``, and since shard schema 3 ``schema`` and ``acl``, the ACL set of the rows of an
  ACL partition; one entry for a domain that is not split);
* ``table_digests`` and ``domain_digests``: the additive digest of each table and of each
  domain's rows of each table (vdgr_core/store/digest.py), so an update recomputes them from
  the rows it deletes and writes;
* ``vector_indexes``: per table, the LanceDB vector index built on its ``vector`` column.

Format 3 adds ``layouts``: per domain, the folder of its query layout and its counts
(vdgr_core/store/domain_layout.py): the memory-mapped arrays and document store the query side
reads instead of loading tables (format 2 named per-domain CSR graph folders, ``graphs``,
which the layouts replace).

Format-1 and format-2 manifests are still read (format 1's shards become single sub-shards,
without digests); an index without layouts is queried only after ``vdgr update`` wrote them.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from typing import Optional, Protocol

from schemas.errors import ConcurrentCommitError, IndexError_
from vdgr_core.store.domain_layout import LayoutRef
from vdgr_core.store.failpoints import failpoint
from vdgr_core.store.location import IndexLocation
from vdgr_core.store.tantivy_shard import ShardInfo

MANIFEST_NAME = "manifest.json"
GENERATIONS_DIR = "manifests"        # object stores: one object per generation
FORMAT_VERSION = 3
READABLE_FORMATS = (1, 2, 3)


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
    layouts: dict[str, LayoutRef] = field(default_factory=dict)   # domain -> query layout
    vector_indexes: dict[str, dict] = field(default_factory=dict)  # table -> index description
    format_version: int = FORMAT_VERSION
    generation: int = 0                     # set by write_manifest: the replaced one's + 1

    def all_shard_folders(self) -> list[str]:
        return [s.folder for shards in self.tantivy_shards.values() for s in shards]

    @property
    def incremental(self) -> bool:
        """True when the manifest has what a row-level update needs (format 2 digests)."""
        return self.format_version >= 2 and bool(self.table_digests)

    def to_json(self) -> str:
        d = asdict(self)
        d["tantivy_shards"] = {dom: [{"sub": s.sub, "folder": s.folder, "n_docs": s.n_docs, "digest": s.digest,
                                      "schema": s.schema, "acl": list(s.acl)}
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
                shards[dom] = (ShardInfo(dom, v, chunks.get(dom, 0), "", 0, ""),)
            else:                          # "schema" absent: written before shards recorded it
                shards[dom] = tuple(ShardInfo(dom, x["folder"], x["n_docs"], x["digest"], x["sub"],
                                              x.get("schema", ""), tuple(x.get("acl", ()))) for x in v)
        d["tantivy_shards"] = shards
        d.pop("graphs", None)              # format 2: per-domain CSR folders, replaced by layouts
        d["layouts"] = {dom: LayoutRef.from_json(v) for dom, v in d.get("layouts", {}).items()}
        return cls(**d)

    def domain(self, name: str) -> DomainInfo:
        for info in self.domains:
            if info.name == name:
                return info
        raise KeyError(name)


def _generation_name(generation: int) -> str:
    return f"{GENERATIONS_DIR}/{generation:012d}.json"


def _latest_generation_object(loc: IndexLocation) -> Optional[str]:
    names = sorted(n for n in loc.list_names(GENERATIONS_DIR) if n.endswith(".json") and n[:-5].isdigit())
    return f"{GENERATIONS_DIR}/{names[-1]}" if names else None


def _manifest_object(loc: IndexLocation) -> str:
    """What readers open: the highest generation object (object store), else manifest.json."""
    if loc.remote:
        return _latest_generation_object(loc) or MANIFEST_NAME
    return MANIFEST_NAME


def current_generation(index_dir: str) -> int:
    """The generation of the committed manifest; -1 when there is none."""
    try:
        return read_manifest(index_dir).generation
    except IndexError_:
        loc = IndexLocation(index_dir)
        if loc.exists(_manifest_object(loc)):
            raise                      # an unreadable manifest is not "no manifest"
        return -1


class CommitGuard(Protocol):
    """What a writer vouches for when it commits: the generation it expects, and the one it wrote.

    :class:`vdgr_core.store.lock.IndexLock` is one (the generation it saw when taken, moved
    along by its own commits).
    """

    def expected_generation(self) -> Optional[int]:
        """The committed generation this writer expects; raises :class:`ConcurrentCommitError`
        when it can no longer vouch for it (an object-store lease taken over)."""

    def committed(self, generation: int) -> None:
        """Record that this writer committed ``generation``."""


def index_key(index_dir: str) -> str:
    """One name per index: the URI of an object-store index, the real path of a local one."""
    loc = IndexLocation(index_dir)
    return loc.uri if loc.remote else os.path.realpath(loc.uri)


def write_manifest(index_dir: str, manifest: Manifest, expect_generation: Optional[int] = None, *,
                   guard: Optional[CommitGuard] = None) -> Manifest:
    """Write the manifest whole (the last write of a commit) as the next generation.

    Parameters
    ----------
    expect_generation:
        The generation the caller read. When None, ``guard`` says which one is expected.
    guard:
        The writer's :class:`CommitGuard` (the held index lock). It is told the generation
        written. With neither an expected generation nor a guard, nothing is checked: this
        function consults no state beyond its arguments and the index.

    Returns
    -------
    Manifest
        ``manifest`` with its ``generation`` set, as written.

    Raises
    ------
    ConcurrentCommitError
        When the committed manifest is no longer the expected generation: this write would
        replace a newer manifest (a writer that bypassed the lock, or a lost object-store lease).
    """
    loc = IndexLocation(index_dir)
    if expect_generation is None and guard is not None:
        expect_generation = guard.expected_generation()
    current = current_generation(index_dir)
    if expect_generation is not None and current != expect_generation:
        raise ConcurrentCommitError(
            f"the manifest of {index_dir} changed during this commit (generation {current}, expected "
            f"{expect_generation}); nothing was replaced: run the command again")
    manifest = replace(manifest, generation=max(current, 0) + 1)
    data = manifest.to_json().encode("utf-8")
    if loc.remote:
        name = _generation_name(manifest.generation)
        if not loc.create_if_absent(name, data):
            raise ConcurrentCommitError(f"manifest generation {manifest.generation} of {index_dir} "
                                        "was committed by another writer; nothing was replaced")
    loc.write_whole(MANIFEST_NAME, data, before_publish=lambda: failpoint("commit.manifest_before_rename"))
    if guard is not None:
        guard.committed(manifest.generation)
    return manifest


def read_manifest(index_dir: str) -> Manifest:
    loc = IndexLocation(index_dir)
    name = _manifest_object(loc)
    try:
        return Manifest.from_json(loc.read_bytes(name).decode("utf-8"))
    except FileNotFoundError:
        raise IndexError_(f"no index at {index_dir!r}: {MANIFEST_NAME} is missing "
                          "(was the build interrupted before its commit?)") from None
    except (ValueError, TypeError, KeyError) as e:
        raise IndexError_(f"unreadable manifest {loc.join(name)!r}: {e}") from e
