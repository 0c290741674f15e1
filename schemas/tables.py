"""Arrow schemas of the index tables (the index contract, see ARCHITECTURE.md)."""
from __future__ import annotations

import pyarrow as pa

_STR_LIST = pa.list_(pa.string())

DOCUMENTS = "documents"
DIRECTORIES = "directories"
CONTENTS = "contents"
ENTITIES = "entities"
EDGES = "edges"
DEAD_LETTERS = "dead_letters"
ENTITY_STATS = "entity_stats"
EMBEDDING_CACHE = "embedding_cache"
SECRET_FINDINGS = "secret_findings"
FILE_STATS = "file_stats"

TABLES = (DOCUMENTS, DIRECTORIES, CONTENTS, ENTITIES, EDGES, DEAD_LETTERS, ENTITY_STATS, SECRET_FINDINGS)

# Edge kinds
CONTAINS = "contains"        # directory -> directory | content   (directed)
HAS_ENTITY = "has_entity"    # content -> entity                   (existence)
COOCCURS = "cooccurs"        # entity <-> entity, src < dst        (undirected, weight = sentences)


def acl_text(acl) -> str:
    """The ``acl_text`` column value for a list of groups (group names never contain '|')."""
    return "|" + "|".join(sorted(acl)) + "|" if acl else ""


def documents_schema() -> pa.Schema:
    return pa.schema([
        ("doc_id", pa.string()),
        ("path", pa.string()),           # rel_path in the corpus
        ("domain", pa.string()),
        ("collection", pa.string()),
        ("version", pa.string()),
        ("acl", _STR_LIST),
        ("title", pa.string()),
        ("content_hash", pa.string()),   # sha256 of the file's bytes
        ("fingerprint", pa.string()),    # content hash + resolved metadata: what update compares
        ("status", pa.string()),         # indexed | dead_letter
        ("n_chunks", pa.int32()),
    ])


def directories_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("node_id", pa.string()),
        ("full_path", _STR_LIST),
        ("path_text", pa.string()),      # " > ".join(full_path)
        ("parent_id", pa.string()),
        ("domain", pa.string()),
        ("collection", pa.string()),
        ("version", pa.string()),
        ("title", pa.string()),
        ("level", pa.int32()),
        ("kind", pa.string()),
        ("acl", _STR_LIST),
        ("acl_text", pa.string()),       # "|g1|g2|": filterable with a typed contains()
        ("public", pa.bool_()),          # acl is empty
        ("source", pa.string()),
        ("sources", _STR_LIST),          # documents whose parse produced this node (update merges)
        ("summary", pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


# One entity as found in one chunk: what the entity merge adds up (kept so that an update can
# recompute entity statistics without annotating unchanged chunks again).
TERM_TYPE = pa.struct([
    ("norm", pa.string()),
    ("name", pa.string()),
    ("kind", pa.string()),
    ("score", pa.float64()),
    ("mentions", pa.int32()),
])


def contents_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("chunk_id", pa.string()),
        ("doc_id", pa.string()),
        ("text", pa.string()),
        ("source", pa.string()),
        ("title", pa.string()),
        ("path", _STR_LIST),
        ("parent_id", pa.string()),
        ("domain", pa.string()),
        ("collection", pa.string()),
        ("version", pa.string()),
        ("acl", _STR_LIST),
        ("acl_text", pa.string()),
        ("public", pa.bool_()),
        ("position", pa.int32()),
        ("page", pa.int32()),            # 1-based page where the chunk starts; null for unpaged formats
        ("n_tokens", pa.int32()),
        ("summary", pa.string()),
        ("entities", _STR_LIST),         # normalized entity names
        ("terms", pa.list_(TERM_TYPE)),  # the same entities, sorted by norm, with name/kind/score/mentions
        ("text_hash", pa.string()),      # sha256 of text: embedding cache key part
        ("flags", _STR_LIST),            # prompt-injection signals in title/path/text (vdgr_core.safety.injection)
        ("vector", pa.list_(pa.float32(), dim)),
    ])


def entities_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("entity_id", pa.string()),
        ("name", pa.string()),
        ("norm", pa.string()),
        ("domain", pa.string()),
        ("kind", pa.string()),
        ("importance", pa.float32()),
        ("frequency", pa.int32()),       # mentions in the domain
        ("chunk_frequency", pa.int32()), # chunks that mention it
        ("doc_frequency", pa.int32()),   # documents that mention it
        ("vector", pa.list_(pa.float32(), dim)),  # mean of its chunks' vectors, normalized
    ])


_COUNTS = pa.list_(pa.struct([("value", pa.string()), ("count", pa.int64())]))


def entity_stats_schema(dim: int) -> pa.Schema:
    """What the entity merge added up per entity (vdgr_core.indexing.entity_merge.EntityStats):
    an update changes an entity from these instead of re-reading every chunk that mentions it."""
    return pa.schema([
        ("entity_id", pa.string()),
        ("domain", pa.string()),
        ("norm", pa.string()),
        ("names", _COUNTS),              # surface form -> mentions
        ("kinds", _COUNTS),              # kind -> chunks
        ("frequency", pa.int64()),
        ("chunks", pa.int64()),
        ("docs", pa.int64()),
        ("best_score", pa.float64()),
        ("vector_sum", pa.list_(pa.int64(), dim)),   # fixed point, 2**40 per unit
    ])


def file_stats_schema() -> pa.Schema:
    """A cache (not part of the index contract): size and mtime of each corpus file when its
    content hash was taken, so an update hashes only files whose size or mtime changed."""
    return pa.schema([
        ("path", pa.string()),
        ("size", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("content_hash", pa.string()),
        ("checked_ns", pa.int64()),      # when the hash was taken (racy-mtime guard)
    ])


def edges_schema() -> pa.Schema:
    return pa.schema([
        ("edge_id", pa.string()),
        ("kind", pa.string()),
        ("src", pa.string()),
        ("dst", pa.string()),
        ("domain", pa.string()),
        ("weight", pa.float32()),
    ])


def dead_letters_schema() -> pa.Schema:
    return pa.schema([
        ("path", pa.string()),
        ("domain", pa.string()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("content_hash", pa.string()),
        ("size_bytes", pa.int64()),
    ])


# --- secret findings: credentials masked at index time, for the owners to rotate ----------
def secret_findings_schema() -> pa.Schema:
    """One credential found (and masked) in a document; never the secret itself."""
    return pa.schema([
        ("finding_id", pa.string()),     # sha256 of (path, line, kind, fingerprint)
        ("path", pa.string()),           # rel_path in the corpus
        ("domain", pa.string()),
        ("line", pa.int32()),            # 1-based line of the decoded document; 0 = unknown
        ("kind", pa.string()),           # aws_access_key, private_key, password, ...
        ("fingerprint", pa.string()),    # digest of the secret (vdgr_core.safety.secrets.fingerprint)
    ])


def embedding_cache_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("key", pa.string()),            # sha256(model id + text)
        ("vector", pa.list_(pa.float32(), dim)),
    ])


def schema_for(table: str, dim: int) -> pa.Schema:
    """Arrow schema of ``table``; ``dim`` is the vector width for tables that carry vectors."""
    fixed = {DOCUMENTS: documents_schema, DEAD_LETTERS: dead_letters_schema, EDGES: edges_schema,
             SECRET_FINDINGS: secret_findings_schema, FILE_STATS: file_stats_schema}
    if table in fixed:
        return fixed[table]()
    with_vectors = {
        DIRECTORIES: directories_schema,
        CONTENTS: contents_schema,
        ENTITIES: entities_schema,
        EMBEDDING_CACHE: embedding_cache_schema,
        ENTITY_STATS: entity_stats_schema,
    }
    return with_vectors[table](dim)
