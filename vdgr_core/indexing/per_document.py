"""What one annotated document contributes to each table, without Beam.

The build's per-document step (transforms/documents.py) and the update's driver path call
these; everything a whole domain decides (entity statistics, co-occurrence weights, summaries
of merged directory nodes) is a combine or a grouping over their outputs.
"""
from __future__ import annotations

import pickle
import zlib
from dataclasses import dataclass
from typing import Iterator, Mapping

from schemas.records import DirectoryNode
from schemas.tables import CONTAINS, COOCCURS, HAS_ENTITY
from vdgr_core.ids import entity_id
from vdgr_core.indexing.annotate import AnnotatedChunk
from vdgr_core.indexing.document import IndexedDocument
from vdgr_core.indexing.entity_merge import EntityStats, document_partials, fixed_point
from vdgr_core.indexing.fingerprint import task_fingerprint
from vdgr_core.indexing.rows import annotated_row, edge_row


@dataclass(frozen=True)
class AnnotatedDocument:
    """A parsed document with its chunks annotated (chunk ids are unique within a document)."""

    doc: IndexedDocument
    chunks: tuple[AnnotatedChunk, ...]

    @property
    def domain(self) -> str:
        return self.doc.task.domain

    @property
    def document_node(self) -> DirectoryNode:
        return next(n for n in self.doc.directories if n.kind == "document")


def document_row(doc: IndexedDocument) -> dict:
    """The documents-table row of a document that parsed."""
    t = doc.task
    return {"doc_id": doc.doc_id, "path": t.rel_path, "domain": t.domain, "collection": t.collection,
            "version": doc.meta.version, "acl": sorted(doc.meta.acl), "title": doc.title,
            "content_hash": doc.content_hash, "fingerprint": task_fingerprint(t, doc.content_hash),
            "status": "indexed", "n_chunks": len(doc.chunks)}


def content_row_without_vector(a: AnnotatedChunk) -> dict:
    row = annotated_row(a, ())
    del row["vector"]
    return row


def entity_partials(adoc: AnnotatedDocument) -> list[tuple[tuple[str, str], EntityStats]]:
    """((domain, norm), partial) per entity the document mentions (vectors come separately)."""
    mentions = [m for a in adoc.chunks for m in a.mentions]
    return sorted(document_partials(mentions).items())


def vector_partials(row: Mapping) -> Iterator[tuple[tuple[str, str], EntityStats]]:
    """((domain, norm), EntityStats with the chunk's vector) per entity a content row names."""
    fixed = fixed_point(row["vector"])
    for t in row["terms"] or ():
        yield (row["domain"], t["norm"]), EntityStats(vector_sum=fixed)


def cooccurrence_pairs(adoc: AnnotatedDocument) -> list[tuple[tuple[str, str, str], int]]:
    """((domain, src entity id, dst entity id), sentences) summed over the document's chunks."""
    out: dict[tuple[str, str, str], int] = {}
    for a in adoc.chunks:
        domain = a.chunk.domain
        for x, y, n in a.pairs:
            src, dst = sorted((entity_id(domain, x), entity_id(domain, y)))
            out[(domain, src, dst)] = out.get((domain, src, dst), 0) + n
    return sorted(out.items())


def cooccurrence_row(key: tuple[str, str, str], weight: int) -> dict:
    domain, src, dst = key
    return edge_row(COOCCURS, src, dst, domain, weight)


def document_edges(adoc: AnnotatedDocument) -> list[dict]:
    """has_entity edges (chunk -> entity, weight = mentions) and section -> chunk containment."""
    out = []
    for a in adoc.chunks:
        c = a.chunk
        out.append(edge_row(CONTAINS, c.parent_id, c.chunk_id, c.domain, 1.0))
        for m in a.mentions:
            out.append(edge_row(HAS_ENTITY, m.chunk_id, entity_id(m.domain, m.norm), m.domain, m.mentions))
    return out


ChunkSummary = tuple[str, int, str, tuple[str, ...]]     # (parent_id, position, summary, acl)


@dataclass(frozen=True)
class DocumentTree:
    """What the bottom-up summaries need of one document: its nodes and its chunks' summaries."""

    nodes: tuple[DirectoryNode, ...]
    chunks: tuple[ChunkSummary, ...]


def pack_tree(tree: DocumentTree) -> bytes:
    """A document tree as one compressed value, the form in which it crosses the shuffle.

    A runner that keeps grouped values (Beam's in-process runner holds every grouping's
    decoded input until the pipeline ends) then holds one short byte string per document, not
    a Python object per directory node and chunk summary (~1.5 KB a chunk at 1M chunks). The
    bytes never leave the job: they are read back by :func:`unpack_tree` in the next step."""
    return zlib.compress(pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack_tree(data: bytes) -> DocumentTree:
    """The tree :func:`pack_tree` packed."""
    tree = pickle.loads(zlib.decompress(data))
    if not isinstance(tree, DocumentTree):
        raise TypeError(f"a packed document tree holds {type(tree).__name__}")
    return tree


def document_tree(adoc: AnnotatedDocument) -> tuple[str, DocumentTree]:
    """(document node id, tree): documents with equal node ids are merged and summarized together."""
    chunks = tuple((a.chunk.parent_id, a.chunk.position, a.chunk.summary, tuple(a.chunk.acl))
                   for a in adoc.chunks)
    return adoc.document_node.node_id, DocumentTree(tuple(adoc.doc.directories), chunks)


__all__ = ["AnnotatedDocument", "DocumentTree", "ChunkSummary", "document_row", "content_row_without_vector",
           "entity_partials", "vector_partials", "cooccurrence_pairs", "cooccurrence_row", "document_edges",
           "document_tree", "pack_tree", "unpack_tree"]
