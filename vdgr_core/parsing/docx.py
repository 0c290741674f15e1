"""DOCX parser (python-docx): heading styles form the table of contents; tables become text.

The first paragraph in the ``Title`` style is the document title; a paragraph whose style is
(or is based on) ``Heading N`` is a heading of level N. Every other paragraph is body text, one
paragraph per block. A table becomes one block with a line per row and its cells separated by
`` | `` (a merged cell once; a nested table inline in its cell, in brackets). Headers, footers, footnotes,
comments and text boxes are not read. DOCX has no fixed pages: sections carry no page numbers.
"""
from __future__ import annotations

import io
import re
import zipfile
from typing import Optional

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.toc import build_document

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"             # compound file: encrypted OOXML or .doc
_ENCRYPTION_INFO = "EncryptionInfo".encode("utf-16-le")
_MAX_UNPACKED_BYTES = 512 * 2**20   # a larger unpacked package is refused (zip bomb guard)


def _style_level(style) -> Optional[int]:
    """Heading level of a paragraph style: 0 for Title, N for Heading N, else None."""
    seen = 0
    while style is not None and seen < 10:
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 0
        m = _HEADING_STYLE.match(name)
        if m:
            return int(m.group(1))
        style, seen = style.base_style, seen + 1
    return None


def _cell_text(cell) -> str:
    parts = []
    for block in cell.iter_inner_content():
        text = f"[{_table_text(block, '; ')}]" if hasattr(block, "rows") else block.text
        if text.strip():
            parts.append(" ".join(text.split()))
    return " ".join(parts)


def _table_text(table, row_sep: str = "\n") -> str:
    rows = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:                        # a merged cell repeats
                continue
            seen.add(id(cell._tc))
            cells.append(_cell_text(cell))
        if any(cells):
            rows.append(" | ".join(cells))
    return row_sep.join(rows)


def _check_package(data: bytes) -> None:
    if data.startswith(_OLE_MAGIC):
        if _ENCRYPTION_INFO in data:
            raise DocumentError(DeadLetterReason.ENCRYPTED, "the DOCX is password-protected")
        raise DocumentError(DeadLetterReason.UNSUPPORTED,
                            "an OLE compound file (legacy .doc?), not a DOCX package")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            unpacked = sum(info.file_size for info in z.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as e:
        raise DocumentError(DeadLetterReason.CORRUPT, f"not a ZIP package: {e}") from None
    if unpacked > _MAX_UNPACKED_BYTES:
        raise DocumentError(DeadLetterReason.TOO_LARGE,
                            f"{unpacked} bytes unpacked > limit {_MAX_UNPACKED_BYTES}")


def parse_docx(data: bytes, fallback_title: str) -> ParsedDocument:
    """Parse the bytes of a DOCX file into a ParsedDocument.

    Parameters
    ----------
    data:
        The file's bytes (size already checked).
    fallback_title:
        Title when the document has no Title paragraph and no single leading Heading 1.

    Returns
    -------
    ParsedDocument

    Raises
    ------
    DocumentError
        ENCRYPTED (password-protected), CORRUPT (not a readable DOCX package), UNSUPPORTED
        (a legacy binary .doc), TOO_LARGE (the package unpacks beyond 512 MiB).
    """
    _check_package(data)
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from lxml.etree import LxmlError

    try:
        document = docx.Document(io.BytesIO(data))
        blocks = list(document.iter_inner_content())
    except (PackageNotFoundError, LxmlError, zipfile.BadZipFile, KeyError, ValueError) as e:
        raise DocumentError(DeadLetterReason.CORRUPT, f"{type(e).__name__}: {e}") from None
    title: Optional[str] = None
    entries: list[list] = [[0, "", []]]
    for block in blocks:
        if hasattr(block, "rows"):
            entries[-1][2].append(_table_text(block))
            continue
        text = block.text.replace("\t", " ").strip()
        if not text:
            continue
        level = _style_level(block.style)
        if level == 0 and title is None:
            title = " ".join(text.split())
        elif level:
            entries.append([level, text, []])
        else:
            entries[-1][2].append(text)
    return build_document([(lvl, t, "\n\n".join(b)) for lvl, t, b in entries], fallback_title,
                          explicit_title=title)
