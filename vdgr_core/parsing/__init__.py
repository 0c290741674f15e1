"""Document parsers: the bytes of one format -> ParsedDocument (title + sections).

Text formats (Markdown, HTML, reStructuredText, plain text) are decoded first
(``decode.decode_document``) and parsed as text; binary formats (PDF, DOCX) are parsed from
their bytes. ``parse_bytes`` is the one entry point that dispatches on the format.
"""
from __future__ import annotations

import posixpath
from typing import Callable, Optional

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.decode import check_size, decode_document
from vdgr_core.parsing.docx import parse_docx
from vdgr_core.parsing.html import parse_html
from vdgr_core.parsing.markdown import parse_markdown
from vdgr_core.parsing.pdf import parse_pdf
from vdgr_core.parsing.rst import parse_rst
from vdgr_core.parsing.text import parse_text

_EXTENSIONS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".rst": "rst",
    ".txt": "text",
    ".pdf": "pdf",
    ".docx": "docx",
}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(sorted(_EXTENSIONS))

# decoded text -> ParsedDocument
_TEXT_PARSERS: dict[str, Callable[[str, str], ParsedDocument]] = {
    "markdown": parse_markdown,
    "html": parse_html,
    "rst": parse_rst,
    "text": parse_text,
}
# raw bytes -> ParsedDocument (the libraries are imported on first use)
_BINARY_PARSERS: dict[str, Callable[[bytes, str], ParsedDocument]] = {
    "pdf": parse_pdf,
    "docx": parse_docx,
}


def format_for_path(path: str) -> Optional[str]:
    """Return the format name for a file path from its extension (case-insensitive).

    Examples
    --------
    >>> format_for_path("a/b/Guide.MD"), format_for_path("x.pdf"), format_for_path("x.png")
    ('markdown', 'pdf', None)
    """
    return _EXTENSIONS.get(posixpath.splitext(path.replace("\\", "/"))[1].lower())


def is_binary_format(fmt: str) -> bool:
    """True for formats parsed from bytes (PDF, DOCX), False for decoded text formats."""
    return fmt in _BINARY_PARSERS


def _with_content(parsed: ParsedDocument) -> ParsedDocument:
    if not any(s.text.strip() for s in parsed.sections):
        raise DocumentError(DeadLetterReason.NO_CONTENT, "no text in any section")
    return parsed


def parse_document(text: str, fmt: str, fallback_title: str) -> ParsedDocument:
    """Parse decoded text of a text format ``fmt``.

    Parameters
    ----------
    text:
        Decoded text (see ``vdgr_core.parsing.decode.decode_document``).
    fmt:
        One of "markdown", "html", "rst", "text".
    fallback_title:
        Title used when the document declares none.

    Returns
    -------
    ParsedDocument

    Raises
    ------
    DocumentError
        UNSUPPORTED for an unknown or binary ``fmt``; NO_CONTENT when no section holds
        text; any error of the format's parser (TRUNCATED, PARSE_ERROR).
    """
    parser = _TEXT_PARSERS.get(fmt)
    if parser is None:
        raise DocumentError(DeadLetterReason.UNSUPPORTED, f"no text parser for format {fmt!r}")
    return _with_content(parser(text, fallback_title))


def parse_bytes(data: bytes, fmt: str, fallback_title: str, max_bytes: int) -> ParsedDocument:
    """Parse the raw bytes of a document of format ``fmt``: the build's entry point.

    Parameters
    ----------
    data:
        The file's bytes.
    fmt:
        A format name from ``format_for_path``.
    fallback_title:
        Title used when the document declares none.
    max_bytes:
        Largest accepted size in bytes.

    Returns
    -------
    ParsedDocument

    Raises
    ------
    DocumentError
        TOO_LARGE, EMPTY; for text formats the decoding errors (BINARY, TRUNCATED,
        UNDECODABLE); for binary formats ENCRYPTED, CORRUPT, NO_TEXT_LAYER; UNSUPPORTED
        for an unknown ``fmt``; NO_CONTENT when no section holds text; PARSE_ERROR.
    """
    check_size(data, max_bytes)
    binary = _BINARY_PARSERS.get(fmt)
    if binary is not None:
        return _with_content(binary(data, fallback_title))
    if fmt not in _TEXT_PARSERS:
        raise DocumentError(DeadLetterReason.UNSUPPORTED, f"no parser for format {fmt!r}")
    return parse_document(decode_document(data, max_bytes), fmt, fallback_title)


__all__ = ["SUPPORTED_EXTENSIONS", "format_for_path", "is_binary_format", "parse_bytes", "parse_document"]
