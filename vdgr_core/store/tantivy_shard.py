"""tantivy BM25 shards: one per domain, built whole and published whole.

A shard folder is named by the digest of what it holds, so a rebuild of unchanged content
gives the same folder name, and a reader pinned by the manifest never sees a half-written
shard: it is built in a local temporary folder, then renamed into place (local index) or
uploaded file by file and completed by a marker object that readers require (object store, see
store/location.py), before the manifest that names it is written.

One BM25 field per chunk: ``body`` is the chunk's heading followed by its text, scored as one
unit. Summing separate BM25 scores of a short ``title`` field, a ``path_text`` field (every
ancestor title, so it matches all descendants of a section) and ``text`` counted a query word
once per field, each with its own saturation and length normalization, which over-rewards
heading and path matches (Robertson, Zaragoza & Taylor 2004, "Simple BM25 extension to
multiple weighted fields"); on the E-Manual S10 questions it cost 12 points of R@5 against a
plain one-field BM25. Shards built before this schema (``text``/``title``/``path_text``) are
still read: they are searched on ``text`` and ``title`` with equal weight.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

import tantivy

from vdgr_core.store.filters import SearchScope
from vdgr_core.store.location import IndexLocation

_WORD = re.compile(r"[A-Za-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by can do does for from how i if in into is it its me my of on or "
    "please should so that the their then there these this to use using was what when where "
    "which who why will with you your".split()
)


SCHEMA_VERSION = "2"          # part of the shard digest: a new schema never reuses an old folder
BODY_FIELDS = ("body",)       # searched fields of a current shard
LEGACY_FIELDS = ("text", "title")   # of a shard built before SCHEMA_VERSION 2


def _schema() -> "tantivy.Schema":
    b = tantivy.SchemaBuilder()
    b.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    b.add_text_field("body", stored=False, tokenizer_name="en_stem")
    b.add_text_field("domain", stored=False, tokenizer_name="raw")
    b.add_text_field("version", stored=False, tokenizer_name="raw")
    b.add_text_field("acl", stored=False, tokenizer_name="raw")
    b.add_text_field("public", stored=False, tokenizer_name="raw")
    return b.build()


SCHEMA = _schema()


@dataclass(frozen=True)
class ShardInfo:
    """Result of a shard build: where it is and what it holds."""

    domain: str
    folder: str       # relative to the index root
    n_docs: int
    digest: str


def shard_digest(rows: Iterable[Mapping]) -> str:
    h = hashlib.sha256()
    h.update(f"schema {SCHEMA_VERSION}".encode("utf-8"))
    h.update(b"\x1d")
    for r in sorted(rows, key=lambda r: r["chunk_id"]):
        for key in ("chunk_id", "text", "title", "version"):
            h.update(str(r[key]).encode("utf-8"))
            h.update(b"\x1f")
        h.update("|".join(sorted(r["acl"])).encode("utf-8"))
        h.update(b"\x1e")
    return h.hexdigest()[:24]


def build_shard(index_root: str, domain: str, rows: list[Mapping]) -> ShardInfo:
    """Build the BM25 shard of ``domain`` from content rows and publish it whole.

    Rows need chunk_id, text, title, version, acl. ``index_root`` is a local folder or an
    object-store URI (the shard is built in a local temporary folder, then published).
    Returns the shard folder relative to ``index_root``. Idempotent: an existing shard with
    the same digest is reused.
    """
    rows = sorted(rows, key=lambda r: r["chunk_id"])
    digest = shard_digest(rows)
    loc = IndexLocation(index_root)
    rel = shard_folder(domain, digest)
    if not loc.folder_complete(rel):
        _publish(loc, rel, lambda tmp: _write(tantivy.Index(SCHEMA, path=tmp), domain, (), rows))
    return ShardInfo(domain, rel, len(rows), digest)


def shard_folder(domain: str, digest: str) -> str:
    """The shard folder of ``domain`` with contents ``digest``, relative to the index root."""
    return f"tantivy/{_safe(domain)}/{digest}"


def update_shard(index_root: str, domain: str, base_folder: Optional[str], all_rows: list[Mapping],
                 deleted_ids: Iterable[str], added_rows: Iterable[Mapping]) -> ShardInfo:
    """Publish the shard of ``domain`` after an update: a copy of ``base_folder`` with
    ``deleted_ids`` deleted and ``added_rows`` added (delete + add, no full rebuild).

    ``all_rows`` are the domain's content rows after the update: they name the shard (the same
    digest, hence the same folder, as a full rebuild of those rows). The base shard is never
    modified, so readers pinned to the previous manifest keep their view. Without a base shard
    (a new domain) the shard is built from ``all_rows``.
    """
    loc = IndexLocation(index_root)
    if base_folder is None or not loc.folder_complete(base_folder):
        return build_shard(index_root, domain, all_rows)
    digest = shard_digest(all_rows)
    rel = shard_folder(domain, digest)
    if not loc.folder_complete(rel):
        def fill(tmp: str) -> None:
            os.rmdir(tmp)
            if loc.remote:
                loc.fetch_folder(base_folder, tmp)
            else:
                shutil.copytree(loc.local_folder(base_folder), tmp)
            _write(tantivy.Index.open(tmp), domain, deleted_ids, added_rows)

        _publish(loc, rel, fill)
    return ShardInfo(domain, rel, len(all_rows), digest)


def _write(index, domain: str, deleted_ids: Iterable[str], rows: Iterable[Mapping]) -> None:
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    for chunk_id in sorted(deleted_ids):
        writer.delete_documents_by_term("chunk_id", chunk_id)
    for r in sorted(rows, key=lambda r: r["chunk_id"]):
        acl = list(r["acl"])
        writer.add_document(tantivy.Document(
            chunk_id=r["chunk_id"],
            body=body_text(r["title"], r["text"]),
            domain=domain,
            version=r["version"],
            acl=acl if acl else [""],
            public="1" if not acl else "0",
        ))
    writer.commit()
    writer.wait_merging_threads()


def _publish(loc: IndexLocation, rel: str, fill) -> None:
    """Fill a local temporary folder, then publish it whole at ``rel`` (see IndexLocation)."""
    if loc.remote:
        tmp = tempfile.mkdtemp(prefix="vdgr-shard-")
    else:
        parent = os.path.dirname(loc.local_folder(rel))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".building-", dir=parent)   # same filesystem: rename
    try:
        fill(tmp)
        loc.publish_folder(tmp, rel)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def body_text(title: str, text: str) -> str:
    """What BM25 indexes for a chunk: its heading, then its text (one field, one unit)."""
    return f"{title or ''}\n{text or ''}".strip()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def query_terms(text: str) -> list[str]:
    """Lower-cased alphanumeric words of ``text`` without stopwords (safe for the parser)."""
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in _STOP]
    return kept or words


class ShardSearcher:
    """BM25 search over one shard with the scope pushed into the query."""

    def __init__(self, path: str):
        self._index = tantivy.Index.open(path)
        self._searcher = self._index.searcher()
        # field ids differ between schema versions: term queries use the shard's own schema
        self._schema = self._index.schema
        try:
            self._index.parse_query("x", list(BODY_FIELDS))
            self._fields = BODY_FIELDS
        except ValueError:
            self._fields = LEGACY_FIELDS

    @property
    def num_docs(self) -> int:
        return self._searcher.num_docs

    @property
    def fields(self) -> tuple[str, ...]:
        """The text fields this shard is searched on."""
        return self._fields

    def search(self, text: str, k: int, scope: SearchScope,
               boosts: Optional[Mapping[str, float]] = None) -> list[tuple[str, float]]:
        """Return up to ``k`` (chunk_id, bm25 score), best first.

        ``boosts`` (field -> weight) only matters for a legacy multi-field shard."""
        terms = query_terms(text)
        if not terms:
            return []
        text_q = self._index.parse_query(
            " ".join(terms), list(self._fields),
            field_boosts={f: float((boosts or {}).get(f, 1.0)) for f in self._fields},
        )
        clauses = [(tantivy.Occur.Must, text_q), (tantivy.Occur.Must, self._access_query(scope))]
        if scope.versions is not None:
            clauses.append((tantivy.Occur.Must, self._any_of("version", scope.versions)))
        query = tantivy.Query.boolean_query(clauses)
        result = self._searcher.search(query, k)
        out = []
        for score, addr in result.hits:
            doc = self._searcher.doc(addr)
            out.append((doc["chunk_id"][0], float(score)))
        return out

    def _access_query(self, scope: SearchScope):
        values = [("public", "1")] + [("acl", g) for g in scope.groups]
        return tantivy.Query.boolean_query([
            (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, f, v)) for f, v in values
        ])

    def _any_of(self, field: str, values):
        if not values:
            return tantivy.Query.empty_query()
        return tantivy.Query.boolean_query([
            (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, field, v)) for v in values
        ])
