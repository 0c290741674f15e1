"""tantivy BM25 shards: one per domain, built whole and published whole.

A shard folder is named by the digest of what it holds, so a rebuild of unchanged content
gives the same folder name, and a reader pinned by the manifest never sees a half-written
shard: it is built in a local temporary folder, then renamed into place (local index) or
uploaded file by file and completed by a marker object that readers require (object store, see
store/location.py), before the manifest that names it is written.

One BM25 field per chunk: ``body`` is the chunk's heading path (every title from the domain
down to the chunk's own heading), then its text, scored as one unit, with the heading written
:data:`HEADING_WEIGHT` times. That is BM25F in its one-field form (Robertson, Zaragoza & Taylor
2004, "Simple BM25 extension to multiple weighted fields"): a field's weight multiplies its
term frequencies before one saturation and one length normalization. Summing separate BM25
scores of ``title``, ``path_text`` and ``text`` fields instead (schema version 1) counted a
query word once per field, each with its own saturation, which over-rewards heading and path
matches. ``python -m bench.quality.bench_bm25_fields`` measures every variant on every benchmark set
(BENCHMARKS.md, block ``bm25_fields``): separate fields lose 4 to 8 points of R@5 on the
manuals; against heading + text (schema 2), the heading path with the doubled heading adds R@1
of the default configuration on five of six development halves (up to 12.5 points) and ties
on the sixth, with R@5 unchanged on every half; neither change alone does as well. Shards of
schema versions 1 and 2 are still read (version 1 is searched on ``text`` and ``title`` with
equal weight); an update rebuilds them in the current schema.

Sub-shards. A domain holding more documents than ``bm25_subshard_max_documents`` is split into
a power of two of sub-shards, a document going to sub-shard ``sha256(path) mod n``: no worker
builds a whole large domain, and an update rewrites only the sub-shards its documents are in.
Since schema version 3 the rows of each ACL set (and the public rows) also have sub-shards of
their own (:func:`subshard_of`), so a caller's BM25 statistics come only from rows it may read.
:class:`MultiShardSearcher` searches a domain's sub-shards as one index (see its docstring for
how BM25 statistics are made consistent across them).

Shard digests are additive (vdgr_core/store/digest.py) over the (chunk_id, text, title,
version, acl) of the rows a shard holds, plus its schema, domain and sub-shard number; the
folder is named by its first 24 hex digits. An update computes the new digest from the old one,
the deleted rows and the added rows.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

import pyarrow as pa
import tantivy

from vdgr_core.store import digest as dg
from vdgr_core.store.filters import SearchScope
from vdgr_core.store.location import IndexLocation, safe_name
from vdgr_core.stopwords import STOP_WORDS

_WORD = re.compile(r"[A-Za-z0-9]+")


SCHEMA_VERSION = "3"          # part of the shard digest: a new schema never reuses an old folder
BODY_FIELDS = ("body",)       # searched fields of a current shard (versions 2 and 3)
HEADING_WEIGHT = 2            # term-frequency weight of a chunk's own heading in ``body``
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
    digest: str       # additive digest (64 hex digits; the folder holds the first 24)
    sub: int = 0      # sub-shard number within the domain
    schema: str = SCHEMA_VERSION   # the shard's schema version ("" when a manifest did not say)
    # the groups that may read every row of the shard; () = public rows, or rows of several
    # ACL sets (a shard built before ACL partitions): every caller searches it
    acl: tuple[str, ...] = ()

    @property
    def current(self) -> bool:
        """Built in this version's schema, with a digest: an update may patch it; any other
        shard is rebuilt from the tables."""
        return bool(self.digest) and self.schema == SCHEMA_VERSION


def subshard_count(n_documents: int, max_documents: int) -> int:
    """Sub-shards of a domain of ``n_documents``: the smallest power of two keeping each under
    ``max_documents`` (documents split evenly by hash), 1 for a small domain."""
    n = 1
    while n_documents > n * max_documents:
        n *= 2
    return n


def acl_partition(acl: Sequence[str]) -> int:
    """0 for public rows; for rows only the groups ``acl`` may read, a 48-bit number named by
    the set (blake2b of the sorted groups), so rows of one ACL set share sub-shards and no
    others do (two sets colliding is a 2^-48 event; :func:`build_shard` refuses it)."""
    if not acl:
        return 0
    h = hashlib.blake2b("\x1f".join(sorted(set(acl))).encode("utf-8"), digest_size=6).digest()
    return 1 + int.from_bytes(h, "big")


def subshard_of(rel_path: str, n_subshards: int, acl: Sequence[str] = ()) -> int:
    """The sub-shard a document's chunks go to (stable across runs and machines): one of
    ``n_subshards`` by a hash of the path, within the partition of the document's ACL set.

    ACL partitions keep BM25 statistics private: a caller searches only the sub-shards of
    public rows and of the ACL sets it may read, so document frequencies, document counts and
    average lengths of rows it cannot read never reach its scores (or the routing and trace
    built from them)."""
    hashed = 0 if n_subshards <= 1 else int(hashlib.sha256(rel_path.encode("utf-8")).hexdigest()[:12], 16) % n_subshards
    return hashed + max(1, n_subshards) * acl_partition(acl)


SHARD_COLUMNS = ("chunk_id", "text", "title", "path", "version", "acl")
_SHARD_SCHEMA = pa.schema([("chunk_id", pa.string()), ("text", pa.string()), ("title", pa.string()),
                           ("path", pa.list_(pa.string())), ("version", pa.string()),
                           ("acl", pa.list_(pa.string()))])


def shard_row_digest(rows: Iterable[Mapping] | pa.Table) -> int:
    """Additive digest (an int) of shard rows; a sum of row hashes, so it can be updated."""
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(
        [{k: r[k] for k in SHARD_COLUMNS} for r in rows], schema=_SHARD_SCHEMA)
    table = table.select(list(SHARD_COLUMNS)).cast(_SHARD_SCHEMA)
    return sum(dg.row_hashes(table)) % dg.MODULUS


def _salt(domain: str, sub: int) -> int:
    h = hashlib.sha256(f"shard schema {SCHEMA_VERSION}\x1f{domain}\x1f{sub}".encode("utf-8")).digest()
    return int.from_bytes(h, "big")


def shard_digest(rows: Iterable[Mapping], domain: str = "", sub: int = 0) -> str:
    """The digest of a shard holding ``rows`` (order does not matter)."""
    return dg.to_hex(_salt(domain, sub) + shard_row_digest(rows))


def build_shard(index_root: str, domain: str, rows: list[Mapping], sub: int = 0) -> ShardInfo:
    """Build the BM25 (sub-)shard ``sub`` of ``domain`` from content rows and publish it whole.

    Rows need chunk_id, text, title, path, version, acl. ``index_root`` is a local folder or an
    object-store URI (the shard is built in a local temporary folder, then published).
    Returns the shard folder relative to ``index_root``. Idempotent: an existing shard with
    the same digest is reused.
    """
    rows = sorted(rows, key=lambda r: r["chunk_id"])
    digest = shard_digest(rows, domain, sub)
    loc = IndexLocation(index_root)
    rel = shard_folder(domain, digest)
    if not loc.folder_complete(rel):
        _publish(loc, rel, lambda tmp: _write(tantivy.Index(SCHEMA, path=tmp), domain, (), rows))
    return ShardInfo(domain, rel, len(rows), digest, sub, SCHEMA_VERSION, shard_acl(rows))


def shard_acl(rows: Sequence[Mapping]) -> tuple[str, ...]:
    """The ACL set every row shares (sorted groups), or () when a row is public or the rows'
    sets differ.

    Raises
    ------
    ValueError
        When rows of different ACL sets fall in one ACL partition (a hash collision): their
        statistics would be shared with callers who may read only one of the sets.
    """
    sets = {tuple(sorted(set(r["acl"] or ()))) for r in rows}
    if len(sets) != 1 or () in sets:
        parts = {acl_partition(a) for a in sets}
        if len(parts) == 1 and 0 not in parts:
            raise ValueError(f"ACL sets {sorted(sets)} share the BM25 partition {parts.pop()}")
        return ()
    return sets.pop()


def shard_folder(domain: str, digest: str) -> str:
    """The shard folder of ``domain`` with contents ``digest``, relative to the index root."""
    return f"tantivy/{safe_name(domain)}/{digest[:24]}"


def update_shard(index_root: str, base: ShardInfo, deleted_rows: Sequence[Mapping],
                 added_rows: Sequence[Mapping]) -> Optional[ShardInfo]:
    """Publish sub-shard ``base`` after an update: a copy of it with ``deleted_rows`` deleted and
    ``added_rows`` added (delete + add, no rebuild), or None when no row is left.

    The new digest is the old one less the deleted rows' and plus the added rows', which is
    what a full rebuild of the resulting rows gives, hence the same folder name. The base shard
    is never modified, so readers pinned to the previous manifest keep their view.
    """
    loc = IndexLocation(index_root)
    n_docs = base.n_docs - len(deleted_rows) + len(added_rows)
    if n_docs <= 0:
        return None
    value = (dg.from_hex(base.digest) - shard_row_digest(deleted_rows) + shard_row_digest(added_rows))
    digest = dg.to_hex(value)
    rel = shard_folder(base.domain, digest)
    if not loc.folder_complete(rel):
        def fill(tmp: str) -> None:
            os.rmdir(tmp)
            if loc.remote:
                loc.fetch_folder(base.folder, tmp)
            else:
                shutil.copytree(loc.local_folder(base.folder), tmp)
            _write(tantivy.Index.open(tmp), base.domain, [r["chunk_id"] for r in deleted_rows], added_rows)

        _publish(loc, rel, fill)
    return ShardInfo(base.domain, rel, n_docs, digest, base.sub, base.schema, base.acl)


def _write(index, domain: str, deleted_ids: Iterable[str], rows: Iterable[Mapping]) -> None:
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    for chunk_id in sorted(deleted_ids):
        writer.delete_documents_by_term("chunk_id", chunk_id)
    for r in sorted(rows, key=lambda r: r["chunk_id"]):
        acl = list(r["acl"])
        writer.add_document(tantivy.Document(
            chunk_id=r["chunk_id"],
            body=body_text(r["title"], r["text"], r.get("path") or ()),
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


def body_text(title: str, text: str, path: Sequence[str] = ()) -> str:
    r"""What BM25 indexes for a chunk (one field, one unit): the titles above it (``path``, which
    may end with the heading itself), its heading :data:`HEADING_WEIGHT` times, then its text.

    Examples
    --------
    >>> body_text("Camera settings", "Tap the gear icon.", ["Manual", "Camera", "Camera settings"])
    'Manual / Camera\nCamera settings\nCamera settings\nTap the gear icon.'
    """
    above = list(path or ())
    if title and above and above[-1] == title:
        above.pop()
    parts = [" / ".join(above), *([title] * HEADING_WEIGHT if title else []), text or ""]
    return "\n".join(p for p in parts if p).strip()


def query_terms(text: str) -> list[str]:
    """Lower-cased alphanumeric words of ``text`` without stopwords (safe for the parser)."""
    words = [w.lower() for w in _WORD.findall(text)]
    kept = [w for w in words if w not in STOP_WORDS]
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
        return self.search_query(text_q, k, scope)

    def search_query(self, text_q, k: int, scope: SearchScope) -> list[tuple[str, float]]:
        """Up to ``k`` (chunk_id, score) for the text query ``text_q`` within ``scope``."""
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

    def doc_freq(self, field: str, token: str) -> int:
        """Documents of this shard holding the analyzed ``token`` in ``field``."""
        return self._searcher.doc_freq(field, token)

    def term_query(self, field: str, token: str):
        return tantivy.Query.term_query(self._schema, field, token)

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


_ANALYZER = None


def _analyzer():
    """The ``en_stem`` analysis (simple tokens, long ones dropped, lower case, English stemmer)
    as a Python object, to look up the terms a query word becomes."""
    global _ANALYZER
    if _ANALYZER is None:
        _ANALYZER = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
                     .filter(tantivy.Filter.remove_long(40)).filter(tantivy.Filter.lowercase())
                     .filter(tantivy.Filter.stemmer("english")).build())
    return _ANALYZER


def bm25_idf(n_docs: int, doc_freq: int) -> float:
    """tantivy's BM25 idf: ``ln(1 + (N - n + 0.5) / (n + 0.5))``."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


class MultiShardSearcher:
    """BM25 search over the sub-shards of one domain, as if they were one index.

    Each sub-shard scores with its own statistics: a term's idf depends on how many of that
    sub-shard's documents hold it. To make scores comparable (and equal to one shard's),
    every query term is a separate clause boosted by ``idf_all / idf_sub``, where ``idf_all``
    comes from the document frequencies summed over the sub-shards: a hit then scores
    ``idf_all x tf-part``, as in a single shard. What stays per sub-shard is the average
    document length in BM25's length normalization; documents are spread over sub-shards by a
    hash of their path, so the averages differ little (tests/vdgr_core/store/test_tantivy_shard.py
    measures the effect against one shard). Hits of all sub-shards are merged by score.

    Sub-shards hold the rows of one ACL partition (:func:`subshard_of`); ``acls`` gives each
    one's ACL set. A search reads only the sub-shards its scope may see, and its statistics
    (``idf_all``) come from those alone: rows a caller cannot read change neither which rows
    it gets nor their scores.
    """

    def __init__(self, paths: Sequence[str], acls: Optional[Sequence[Sequence[str]]] = None):
        self._shards = [ShardSearcher(p) for p in paths]
        self._acls = [tuple(a) for a in acls] if acls is not None else [()] * len(paths)

    @property
    def num_docs(self) -> int:
        return sum(s.num_docs for s in self._shards)

    @property
    def fields(self) -> tuple[str, ...]:
        return BODY_FIELDS

    def visible(self, scope: SearchScope) -> list[ShardSearcher]:
        """The sub-shards ``scope`` may search: public ones (or of several ACL sets) and those of
        an ACL set holding one of its groups."""
        return [s for s, acl in zip(self._shards, self._acls) if scope.can_see(acl)]

    def search(self, text: str, k: int, scope: SearchScope,
               boosts: Optional[Mapping[str, float]] = None) -> list[tuple[str, float]]:
        """Up to ``k`` (chunk_id, bm25 score) over every sub-shard ``scope`` may search, with
        the statistics of those sub-shards only, best first (ties by id)."""
        shards = self.visible(scope)
        if len(shards) <= 1:             # one shard's own statistics: exactly a single shard's scores
            return shards[0].search(text, k, scope, boosts) if shards else []
        # distinct terms, as tantivy's query parser makes them (a repeated word counts once)
        tokens = list(dict.fromkeys(t for w in query_terms(text) for t in _analyzer().analyze(w)))
        if not tokens:
            return []
        field = BODY_FIELDS[0]
        n_all = sum(s.num_docs for s in shards)
        df = {t: [s.doc_freq(field, t) for s in shards] for t in set(tokens)}
        hits: list[tuple[str, float]] = []
        for i, shard in enumerate(shards):
            clauses = []
            for t in tokens:
                if df[t][i] == 0:
                    continue
                boost = bm25_idf(n_all, sum(df[t])) / bm25_idf(shard.num_docs, df[t][i])
                clauses.append(tantivy.Query.boost_query(shard.term_query(field, t), boost))
            if clauses:
                hits += shard.search_query(tantivy.Query.boolean_query(
                    [(tantivy.Occur.Should, q) for q in clauses]), k, scope)
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]
