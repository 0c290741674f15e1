"""Immutable records passed between pipeline steps and returned by plain functions.

Every record is a frozen dataclass: Beam elements must not be mutated, and frozen
dataclasses pickle cheaply. Tuples, never lists, so records are hashable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Section:
    """One heading of a parsed document and the body text directly under it.

    Attributes
    ----------
    title:
        Heading text ("" for text before the first heading).
    level:
        Heading depth in the document: 1 for a top heading, 0 for the preamble.
    heading_path:
        Titles of the enclosing headings from the top of the document down to and
        including this one (empty for the preamble).
    text:
        Body text under this heading, subsections excluded; paragraphs separated by
        a blank line.
    pages:
        For paged formats (PDF), ``(offset, page)`` pairs in order: the text from its
        ``offset``-th non-whitespace character on starts on 1-based ``page``. Counting
        non-whitespace characters keeps offsets valid through whitespace normalization
        and chunking. Empty for formats without pages.
    """

    title: str
    level: int
    heading_path: tuple[str, ...]
    text: str
    pages: tuple[tuple[int, int], ...] = ()

    def page_at(self, offset: int) -> Optional[int]:
        """The page holding the ``offset``-th non-whitespace character of ``text`` (None without pages).

        Examples
        --------
        >>> s = Section("Setup", 1, ("Setup",), "abc def", pages=((0, 2), (3, 3)))
        >>> s.page_at(0), s.page_at(2), s.page_at(3), Section("", 0, (), "x").page_at(0)
        (2, 2, 3, None)
        """
        page = self.pages[0][1] if self.pages else None
        for start, p in self.pages:
            if start > offset:
                break
            page = p
        return page


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser returns: a title, front-matter metadata and the sections in order."""

    title: str
    sections: tuple[Section, ...]
    metadata: tuple[tuple[str, object], ...] = ()

    def meta(self) -> dict:
        return dict(self.metadata)


@dataclass(frozen=True)
class DocMeta:
    """Metadata resolved for one document (front matter > nearest _meta.yaml > domain)."""

    version: str = ""
    acl: tuple[str, ...] = ()
    title: Optional[str] = None
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DocumentTask:
    """A file of the corpus to index, discovered by the driver.

    ``rel_path`` is POSIX, relative to the corpus root; its first part is the domain.
    ``folder_titles`` are the folders between the domain and the file.
    """

    corpus_root: str
    rel_path: str
    domain: str
    collection: str
    folder_titles: tuple[str, ...]
    meta: DocMeta
    folder_metas: tuple[DocMeta, ...] = ()  # resolved meta for domain, then each folder


@dataclass(frozen=True)
class Term:
    """A technical term found in a text by the entity extractor."""

    name: str          # surface form as it appeared
    norm: str          # normalized key (case-folded, separators unified)
    kind: str          # acronym | identifier | camel | versioned | multiword | llm
    score: float       # importance in [0, 1]


@dataclass(frozen=True)
class DeadLetter:
    """A document that could not be indexed, and why."""

    rel_path: str
    domain: str
    reason: str        # one of schemas.errors.DeadLetterReason values
    detail: str
    content_hash: str = ""
    size_bytes: int = 0


@dataclass(frozen=True)
class Chunk:
    """A chunk of a section: the unit of retrieval (a content node before embedding)."""

    chunk_id: str
    doc_id: str
    text: str
    source: str                      # rel_path of the document
    title: str                       # section title (document title for the preamble)
    path: tuple[str, ...]            # domain / folders / doc title / headings
    parent_id: str                   # directory node id of the section
    domain: str
    collection: str
    version: str
    acl: tuple[str, ...]
    position: int                    # order of the chunk in its document
    n_tokens: int
    summary: str = ""
    entities: tuple[str, ...] = ()   # normalized entity names found in the chunk
    page: Optional[int] = None       # 1-based page where the chunk's text starts (paged formats)


@dataclass(frozen=True)
class DirectoryNode:
    """A directory node: the domain, a folder, a document or a heading."""

    node_id: str
    full_path: tuple[str, ...]
    parent_id: str                   # "" for the domain root
    domain: str
    collection: str
    version: str
    title: str
    level: int                       # 0 = domain, 1 = collection, ...
    kind: str                        # domain | folder | document | section
    acl: tuple[str, ...]
    source: str = ""                 # rel_path of the document for document/section nodes
    sources: tuple[str, ...] = ()    # after the merge: every document that produced this node
    summary: str = ""
