"""Read, check, parse and chunk one document: the per-file work of the build, without Beam."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from schemas.config import ParseSettings
from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import Chunk, DeadLetter, DirectoryNode, DocMeta, DocumentTask
from vdgr_core.chunking import chunk_document
from vdgr_core.ids import content_hash, doc_id
from vdgr_core.indexing.mask import mask_parsed, mask_raw
from vdgr_core.parsing import format_for_path, is_binary_format, parse_bytes, parse_document
from vdgr_core.parsing.decode import decode_document


@dataclass(frozen=True)
class IndexedDocument:
    """A document that parsed: its documents-table row, directory nodes and chunks."""

    task: DocumentTask
    doc_id: str
    title: str
    meta: DocMeta
    content_hash: str
    directories: tuple[DirectoryNode, ...]
    chunks: tuple[Chunk, ...]
    # credentials masked in the text (line, kind, fingerprint; never the secret)
    secret_findings: tuple = ()


def process_document(task: DocumentTask, data: bytes, parse: ParseSettings) -> IndexedDocument:
    """Decode (text formats), mask credentials in, parse and chunk ``data`` (the bytes of ``task``'s file).

    Credentials are masked before parsing (and once more in the parsed text), so every row
    made from the document holds ``[REDACTED:<kind>]`` instead (vdgr_core/indexing/mask.py).
    PDF and DOCX are parsed from their bytes and masked in the parsed text only.

    Raises
    ------
    DocumentError
        With the dead-letter reason when the document cannot be indexed.
    """
    fmt = format_for_path(task.rel_path)
    if fmt is None:
        raise DocumentError(DeadLetterReason.UNSUPPORTED, f"no parser for {task.rel_path!r}")
    fallback = task.rel_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if is_binary_format(fmt):
        raw, early = "", ()
    else:
        raw = decode_document(data, parse.limits.max_file_bytes)
        masked = mask_raw(raw, markup=fmt == "html")
        early = masked.findings
    try:
        if is_binary_format(fmt):
            parsed, late = mask_parsed(parse_bytes(data, fmt, fallback, parse.limits.max_file_bytes), raw)
        else:
            parsed, late = mask_parsed(parse_document(masked.text, fmt, fallback), raw)
    except DocumentError:
        raise
    except Exception as e:  # a parser bug must not stop the build: dead-letter it, typed
        raise DocumentError(DeadLetterReason.PARSE_ERROR, f"{type(e).__name__}: {e}") from e
    if len(parsed.sections) > parse.limits.max_sections_per_doc:
        raise DocumentError(DeadLetterReason.TOO_LARGE,
                            f"{len(parsed.sections)} sections > {parse.limits.max_sections_per_doc}")
    chunked = chunk_document(task, parsed, parse.chunking)
    if not chunked.chunks:
        raise DocumentError(DeadLetterReason.NO_CONTENT, "the document has no text to index")
    return IndexedDocument(
        task=task,
        doc_id=doc_id(task.rel_path),
        title=chunked.title,
        meta=chunked.meta,
        content_hash=content_hash(data),
        directories=chunked.directories,
        chunks=chunked.chunks,
        secret_findings=tuple(sorted(set(tuple(early) + tuple(late)), key=lambda f: (f.line, f.kind, f.fingerprint))),
    )


def dead_letter_for(task: DocumentTask, data: bytes | None, error: DocumentError) -> DeadLetter:
    return DeadLetter(
        rel_path=task.rel_path,
        domain=task.domain,
        reason=error.reason.value,
        detail=error.detail[:500],
        content_hash=content_hash(data) if data is not None else "",
        size_bytes=len(data) if data is not None else 0,
    )


def read_bytes_limited(open_fn: Callable, path: str, max_bytes: int) -> bytes:
    """Read at most ``max_bytes + 1`` bytes so an enormous file is refused without loading it."""
    with open_fn(path) as f:
        return f.read(max_bytes + 1)


def load_document(task: DocumentTask, parse: ParseSettings, open_fn: Callable,
                  join_fn: Callable[..., str]) -> "IndexedDocument | DeadLetter":
    """Read ``task``'s file (through ``open_fn``) and process it; a failure becomes its DeadLetter.

    The per-file step of a build or an update: it never raises for bad input.
    """
    data = None
    try:
        try:
            data = read_bytes_limited(open_fn, join_fn(task.corpus_root, *task.rel_path.split("/")),
                                      parse.limits.max_file_bytes)
        except OSError as e:
            raise DocumentError(DeadLetterReason.READ_ERROR, str(e)) from e
        return process_document(task, data, parse)
    except DocumentError as e:
        return dead_letter_for(task, data, e)
