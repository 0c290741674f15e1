"""Recursive chunking of section text, and turning a parsed document into nodes + chunks."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable

from schemas.config import ChunkingConfig
from schemas.errors import ConfigError, DeadLetterReason, DocumentError
from schemas.records import Chunk, DirectoryNode, DocMeta, DocumentTask, ParsedDocument
from vdgr_core import ids
from vdgr_core.metadata import apply_front_matter
from vdgr_core.parsing.toc import nonspace_len
from vdgr_core.sentences import split_sentences

_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Count word runs and single punctuation marks.

    Examples
    --------
    >>> count_tokens("Reset the X2, then wait.")
    7
    """
    return len(_TOKEN.findall(text))


# ---------------------------------------------------------------------------- splitting

def _split_words(text: str) -> list[str]:
    return text.split()


def _split_paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _split_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.split("\n") if ln.strip()]


# (splitter, separator used when packing its pieces back together)
_LEVELS: tuple[tuple[Callable[[str], list[str]], str], ...] = (
    (_split_paragraphs, "\n\n"),
    (_split_lines, "\n"),
    (split_sentences, " "),
    (_split_words, " "),
)


def _hard_split(word: str, max_tokens: int) -> list[str]:
    """Split one whitespace-free string with too many tokens at token starts."""
    starts = [m.start() for m in _TOKEN.finditer(word)][::max_tokens]
    return [word[a:b] for a, b in zip(starts, starts[1:] + [len(word)]) if word[a:b]]


def _pack(pieces: list[str], sep: str, max_tokens: int) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        n = count_tokens(piece)
        if current and size + n > max_tokens:
            out.append(sep.join(current))
            current, size = [], 0
        current.append(piece)
        size += n
    if current:
        out.append(sep.join(current))
    return out


def _split(text: str, max_tokens: int, level: int) -> list[str]:
    if count_tokens(text) <= max_tokens:
        return [text]
    if level >= len(_LEVELS):
        return _hard_split(text, max_tokens)
    splitter, sep = _LEVELS[level]
    pieces = splitter(text)
    if len(pieces) <= 1:
        return _split(pieces[0] if pieces else text, max_tokens, level + 1)
    small: list[str] = []
    for piece in pieces:
        small.extend(_split(piece, max_tokens, level + 1) if count_tokens(piece) > max_tokens
                     else [piece])
    return _pack(small, sep, max_tokens)


def _tail(text: str, overlap_tokens: int) -> str:
    """The longest run of whole words at the end of ``text`` with <= overlap_tokens tokens."""
    if overlap_tokens <= 0:
        return ""
    words = list(re.finditer(r"\S+", text))
    total, start = 0, None
    for m in reversed(words):
        n = count_tokens(m.group())
        if total + n > overlap_tokens:
            break
        total += n
        start = m.start()
    return text[start:] if start is not None else ""


def split_text(text: str, max_tokens: int, overlap_tokens: int) -> list[str]:
    """Split text into chunks of at most ``max_tokens`` tokens plus an overlap.

    Splits recursively on paragraphs, then lines, then sentences, then words, and packs
    adjacent pieces up to ``max_tokens``. Every chunk after the first starts with the
    last whole words (at most ``overlap_tokens`` tokens) of the previous chunk.

    Parameters
    ----------
    text:
        Text to split.
    max_tokens:
        Budget of a chunk before its overlap.
    overlap_tokens:
        Budget of the overlap prefix.

    Returns
    -------
    list of str
        Chunks in order; [] for blank text. No chunk has more than
        ``max_tokens + overlap_tokens`` tokens and every word of ``text`` is kept.
    """
    return [piece for piece, _, _ in _split_counted(text, max_tokens, overlap_tokens)]


#: names the rules chunks are cut with (chunks-2: a chunk's overlap joins it with the line or
#: paragraph break that stood between them); part of the content rules recorded in the
#: manifest (vdgr_core.safety.content_rules)
CHUNKER_VERSION = "chunks-2"

# Sections repeat across the documents of a corpus (manuals of several models and versions), so
# the split of a section text of at most this many characters is memoized per process.
_MEMO_MAX_CHARS = 65536


def _split_counted(text: str, max_tokens: int, overlap_tokens: int) -> tuple[tuple[str, int, int], ...]:
    """``split_text``'s chunks, each with its ``count_tokens`` and start (memoized for usual sizes).

    The start is the number of non-whitespace characters of ``text`` before the chunk's first
    one (its overlap included): the unit of ``Section.pages``, which whitespace changes made by
    splitting and packing leave intact.
    """
    if len(text) <= _MEMO_MAX_CHARS:
        return _split_counted_memo(text, max_tokens, overlap_tokens)
    return _split_counted_now(text, max_tokens, overlap_tokens)


def _split_counted_now(text: str, max_tokens: int, overlap_tokens: int) -> tuple[tuple[str, int, int], ...]:
    if not text.strip():
        return ()
    text = text.strip()
    base = [c for c in _split(text, max_tokens, 0) if c.strip()]
    out = [(base[0], 0)]
    start = 0
    nonspace = [i for i, ch in enumerate(text) if not ch.isspace()] if len(base) > 1 else []
    for prev, chunk in zip(base, base[1:]):
        start += nonspace_len(prev)
        tail = _tail(prev, overlap_tokens)
        # the overlap joins the chunk as the text joined them: a paragraph break stays one
        between = text[nonspace[start - 1] + 1:nonspace[start]]
        sep = "\n\n" if between.count("\n") > 1 else "\n" if "\n" in between else " "
        out.append((f"{tail}{sep}{chunk}", start - nonspace_len(tail)) if tail else (chunk, start))
    return tuple((piece, count_tokens(piece), at) for piece, at in out)


_split_counted_memo = lru_cache(maxsize=8192)(_split_counted_now)


# ---------------------------------------------------------------------------- documents

@dataclass(frozen=True)
class DocumentChunks:
    """A parsed document as directory nodes (document + headings) and chunks."""

    title: str
    meta: DocMeta
    directories: tuple[DirectoryNode, ...]
    chunks: tuple[Chunk, ...]


def folder_nodes(task: DocumentTask) -> tuple[DirectoryNode, ...]:
    """The domain node and one node per folder above a document, outermost first.

    Each node takes version and ACL from its own entry of ``task.folder_metas``
    (``task.meta`` when those are missing).

    Returns
    -------
    tuple of DirectoryNode
    """
    nodes: list[DirectoryNode] = []
    parent = ""
    for depth in range(len(task.folder_titles) + 1):
        meta = task.folder_metas[depth] if depth < len(task.folder_metas) else task.meta
        full_path = (task.domain, *task.folder_titles[:depth])
        node = DirectoryNode(
            node_id=ids.directory_id(task.domain, meta.version, full_path),
            full_path=full_path,
            parent_id=parent,
            domain=task.domain,
            collection=task.collection if depth else "",
            version=meta.version,
            title=full_path[-1],
            level=len(full_path) - 1,
            kind="folder" if depth else "domain",
            acl=meta.acl,
        )
        nodes.append(node)
        parent = node.node_id
    return tuple(nodes)


def chunk_document(task: DocumentTask, parsed: ParsedDocument, config: ChunkingConfig) -> DocumentChunks:
    """Turn a parsed document into its directory nodes and chunks.

    Parameters
    ----------
    task:
        Where the document sits in the corpus and its folder metadata.
    parsed:
        Output of ``vdgr_core.parsing.parse_document``.
    config:
        Chunk size and overlap.

    Returns
    -------
    DocumentChunks
        The document node and one node per distinct heading path (document order),
        and chunks of every section's text, deduplicated by id, numbered in order.

    Raises
    ------
    DocumentError
        PARSE_ERROR when the front matter holds invalid metadata (e.g. a bad ACL group).
    """
    meta = _document_meta(task, parsed)
    title, version, acl = meta.title, meta.version, meta.acl
    doc_path = (task.domain, *task.folder_titles, title)
    doc_node = _directory_node(task, meta, doc_path, folder_nodes(task)[-1].node_id, title, "document")
    nodes: dict[tuple[str, ...], DirectoryNode] = {doc_path: doc_node}
    chunks: list[Chunk] = []
    seen: set[str] = set()
    doc_id = ids.doc_id(task.rel_path)
    for section in parsed.sections:
        full_path = doc_path + section.heading_path
        node = nodes.get(full_path)
        if node is None:
            parent = nodes.get(full_path[:-1], doc_node)
            node = nodes[full_path] = _directory_node(task, meta, full_path, parent.node_id, section.title,
                                                      "section")
        for text, n_tokens, start in _split_counted(section.text, config.max_tokens, config.overlap_tokens):
            cid = ids.chunk_id(task.rel_path, text)
            if cid in seen:
                continue
            seen.add(cid)
            chunks.append(Chunk(
                chunk_id=cid, doc_id=doc_id, text=text, source=task.rel_path,
                title=section.title if section.heading_path else title, path=full_path, parent_id=node.node_id,
                domain=task.domain, collection=task.collection, version=version, acl=acl,
                position=len(chunks), n_tokens=n_tokens, page=section.page_at(start),
            ))
    return DocumentChunks(title=title, meta=meta, directories=tuple(nodes.values()),
                          chunks=tuple(chunks))


def _document_meta(task: DocumentTask, parsed: ParsedDocument) -> DocMeta:
    """The document's metadata: its folder's, then its front matter's, with its title (the
    parsed title, the metadata's, or the file name)."""
    try:
        meta = apply_front_matter(task.meta, parsed.meta())
    except ConfigError as e:
        raise DocumentError(DeadLetterReason.PARSE_ERROR, f"front matter: {e}") from None
    return replace(meta, title=parsed.title or meta.title or task.rel_path.rsplit("/", 1)[-1])


def _directory_node(task: DocumentTask, meta: DocMeta, full_path: tuple[str, ...], parent_id: str, title: str,
                    kind: str) -> DirectoryNode:
    """The node of the document (``kind`` "document") or of one of its headings ("section")."""
    return DirectoryNode(
        node_id=ids.directory_id(task.domain, meta.version, full_path), full_path=full_path,
        parent_id=parent_id, domain=task.domain, collection=task.collection, version=meta.version,
        title=title, level=len(full_path) - 1, kind=kind, acl=meta.acl, source=task.rel_path,
    )
