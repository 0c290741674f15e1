"""Deterministic, content-addressed identifiers (sha256 of key fields; never uuid4 or hash())."""
from __future__ import annotations

import hashlib

_SEP = "\x1f"


def stable_id(kind: str, *parts: str, length: int = 32) -> str:
    """Return a hex id for ``kind`` and ``parts``; equal inputs give equal ids on any machine."""
    h = hashlib.sha256()
    h.update(kind.encode("utf-8"))
    for p in parts:
        h.update(_SEP.encode("utf-8"))
        h.update(str(p).encode("utf-8"))
    return h.hexdigest()[:length]


def content_hash(data: bytes | str) -> str:
    """Full sha256 hex digest of bytes (or UTF-8 text)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def doc_id(rel_path: str) -> str:
    return stable_id("doc", rel_path)


def directory_id(domain: str, version: str, full_path: tuple[str, ...]) -> str:
    """Directory nodes are keyed on (full path, version): versions stay apart."""
    return stable_id("dir", domain, version, *full_path)


def chunk_id(source: str, text: str) -> str:
    """Content nodes are keyed on (content, source)."""
    return stable_id("chunk", source, text)


def entity_id(domain: str, norm: str) -> str:
    """Entity nodes are keyed on normalized name per domain."""
    return stable_id("entity", domain, norm)


def edge_id(kind: str, src: str, dst: str) -> str:
    return stable_id("edge", kind, src, dst)


def document_fingerprint(content_sha256: str, meta_repr: str) -> str:
    """What an incremental update compares: the bytes and the metadata resolved for them."""
    return stable_id("fingerprint", content_sha256, meta_repr)
