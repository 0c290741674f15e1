"""Document parsers: decoded text of one format -> ParsedDocument (title + sections)."""
from __future__ import annotations

import posixpath
from typing import Callable, Optional

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.html import parse_html
from vdgr_core.parsing.markdown import parse_markdown
from vdgr_core.parsing.rst import parse_rst
from vdgr_core.parsing.text import parse_text

_EXTENSIONS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".rst": "rst",
    ".txt": "text",
}
SUPPORTED_EXTENSIONS: tuple[str, ...] = tuple(sorted(_EXTENSIONS))

_PARSERS: dict[str, Callable[[str, str], ParsedDocument]] = {
    "markdown": parse_markdown,
    "html": parse_html,
    "rst": parse_rst,
    "text": parse_text,
}


def format_for_path(path: str) -> Optional[str]:
    """Return the format name for a file path from its extension (case-insensitive).

    Examples
    --------
    >>> format_for_path("a/b/Guide.MD"), format_for_path("x.pdf")
    ('markdown', None)
    """
    return _EXTENSIONS.get(posixpath.splitext(path.replace("\\", "/"))[1].lower())


def parse_document(text: str, fmt: str, fallback_title: str) -> ParsedDocument:
    """Parse decoded text of format ``fmt``.

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
        UNSUPPORTED for an unknown ``fmt``; NO_CONTENT when no section holds text; any
        error of the format's parser (TRUNCATED, PARSE_ERROR).
    """
    parser = _PARSERS.get(fmt)
    if parser is None:
        raise DocumentError(DeadLetterReason.UNSUPPORTED, f"no parser for format {fmt!r}")
    parsed = parser(text, fallback_title)
    if not any(s.text.strip() for s in parsed.sections):
        raise DocumentError(DeadLetterReason.NO_CONTENT, "no text in any section")
    return parsed


__all__ = ["SUPPORTED_EXTENSIONS", "format_for_path", "parse_document"]
