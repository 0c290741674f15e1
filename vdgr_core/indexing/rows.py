"""Conversion of records to rows of the index tables (schemas.tables)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from schemas.records import Chunk, DeadLetter, DirectoryNode
from schemas.tables import acl_text
from vdgr_core.ids import content_hash, edge_id, stable_id
from vdgr_core.safety.injection import injection_flags


def content_embedding_text(path: Sequence[str], text: str) -> str:
    """What is embedded for a content node: its section path (without the domain) and text."""
    return " > ".join(path[1:]) + "\n" + text


def directory_embedding_text(node: DirectoryNode) -> str:
    head = " > ".join(node.full_path[1:]) or node.full_path[0]
    return head + "\n" + node.summary


def chunk_row(c: Chunk, vector, mentions: Sequence = ()) -> dict:
    """The contents-table row of ``c``; ``mentions`` (EntityMention) fill the ``terms`` column."""
    return {
        "chunk_id": c.chunk_id, "doc_id": c.doc_id, "text": c.text, "source": c.source,
        "title": c.title, "path": list(c.path), "parent_id": c.parent_id, "domain": c.domain,
        "collection": c.collection, "version": c.version, "acl": sorted(c.acl),
        "acl_text": acl_text(c.acl), "public": not c.acl, "position": c.position, "page": c.page,
        "n_tokens": c.n_tokens, "summary": c.summary, "entities": list(c.entities),
        "terms": [{"norm": m.norm, "name": m.name, "kind": m.kind, "score": float(m.score),
                   "mentions": m.mentions} for m in sorted(mentions, key=lambda m: m.norm)],
        "text_hash": content_hash(c.text), "flags": list(chunk_flags(c)),
        "vector": np.asarray(vector, dtype=np.float32),
    }


def chunk_flags(c: Chunk) -> tuple[str, ...]:
    """Prompt-injection signals of a chunk: its path (titles from the domain down), title and text."""
    return injection_flags(" > ".join(c.path) + "\n" + c.title + "\n" + c.text)


def annotated_row(a, vector) -> dict:
    """The contents-table row of an AnnotatedChunk (its chunk and entity mentions)."""
    return chunk_row(a.chunk, vector, a.mentions)


def directory_row(n: DirectoryNode, vector) -> dict:
    return {
        "node_id": n.node_id, "full_path": list(n.full_path), "path_text": " > ".join(n.full_path),
        "parent_id": n.parent_id, "domain": n.domain, "collection": n.collection,
        "version": n.version, "title": n.title, "level": n.level, "kind": n.kind,
        "acl": sorted(n.acl), "acl_text": acl_text(n.acl), "public": not n.acl,
        "source": n.source, "sources": list(n.sources), "summary": n.summary, "vector": np.asarray(vector, dtype=np.float32),
    }


def edge_row(kind: str, src: str, dst: str, domain: str, weight: float) -> dict:
    return {"edge_id": edge_id(kind, src, dst), "kind": kind, "src": src, "dst": dst,
            "domain": domain, "weight": float(weight)}


def secret_finding_rows(rel_path: str, domain: str, findings) -> list[dict]:
    """Rows of the ``secret_findings`` table for one document's findings (one per distinct finding)."""
    return [{"finding_id": stable_id("secret", rel_path, str(f.line), f.kind, f.fingerprint),
             "path": rel_path, "domain": domain, "line": f.line, "kind": f.kind,
             "fingerprint": f.fingerprint} for f in sorted(set(findings), key=lambda f: (f.line, f.kind, f.fingerprint))]


def dead_letter_row(d: DeadLetter) -> dict:
    return {"path": d.rel_path, "domain": d.domain, "reason": d.reason, "detail": d.detail,
            "content_hash": d.content_hash, "size_bytes": d.size_bytes}
