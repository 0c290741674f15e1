"""PDF parser: the outline (bookmarks) is the table of contents, else headings by font.

PDFium (pypdfium2) opens the file and gives the outline, the declared title and every
character with its box, font size and font; :mod:`vdgr_core.parsing.pdf_layout` lays the
characters out into lines and boxes. Without an outline, a line set entirely in a font larger
than the body text is a heading, and so is a bold line at body size that is also numbered, set
out to the left of the body text or set off by space above it; a line of option flags or a path
("-v -x -D", "/dev/stdin") is never one (:mod:`vdgr_core.parsing.pdf_headings`). The larger
font the higher level. Page numbers are physical and 1-based; each section records on which
page its text continues (``Section.pages``), so a chunk knows its first page.

Cleaning, in this order: a definition term set beside its description (a narrow column of
terms, "-a" beside "Each variable ...") is joined to the description's first line, so term
and meaning stay in one block; ligatures are expanded (NFKC), the Unicode minus becomes "-"
and control characters are dropped; running headers and footers (a line at a page's top or
bottom recurring at the same height, digits ignored, on three pages when it holds a number,
else on a quarter of the pages), bare page numbers and table-of-contents or index pages (five
or more dot-leader lines) are dropped; a word hyphenated at a line end is joined ("sig-" +
"nal" -> "signal") unless the document writes the hyphenated form elsewhere and never the
joined one ("non-" + "zero" stays "non-zero") (:mod:`vdgr_core.parsing.pdf_clean`).

``PARSER_VERSION`` names these rules; it is part of the content rules recorded in the manifest
(``vdgr_core.safety.content_rules``), so a change re-parses every document on the next update.
"""
from __future__ import annotations

import re
from typing import Optional

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.pdf_clean import (drop_running_lines, drop_toc_pages, join_broken_word,
                                         vocabulary)
from vdgr_core.parsing.pdf_headings import document_title, font_headings, outline_headings
from vdgr_core.parsing.pdf_layout import Bookmark, Line, clean_text, pair_terms, read_pdf
from vdgr_core.parsing.toc import build_document, nonspace_len

_CAPITALS_BROKEN = re.compile(r"\b[A-Z]{2,}-$")

__all__ = ["PARSER_VERSION", "Bookmark", "Line", "clean_text", "drop_running_lines", "drop_toc_pages",
           "font_headings", "join_broken_word", "outline_headings", "pair_terms", "parse_pdf"]

# the rules below (extraction, cleaning, pairing, headings); part of the content rules in the manifest
PARSER_VERSION = "pdf-5"


class _Body:
    """Text under one heading, with the page on which each part of it starts."""

    def __init__(self, vocabulary: tuple[set[str], set[str]] = (set(), set())):
        self.vocabulary = vocabulary
        self.parts: list[str] = []
        self.pages: list[tuple[int, int]] = []
        self._offset = 0
        self._where: Optional[tuple[int, int]] = None   # (page, box) of the last line

    def add(self, ln: Line) -> None:
        if not self.pages or self.pages[-1][1] != ln.page:
            self.pages.append((self._offset, ln.page))
        same_box = self._where == (ln.page, ln.box)
        # a word broken at the end of a box goes on in the next box (or page) in lower case, or
        # in capitals after a capital word ("GRAM-" + "MAR above")
        joined = (join_broken_word(self.parts[-1], ln.text, *self.vocabulary)
                  if self.parts and (same_box or ln.text[:1].islower() or _CAPITALS_BROKEN.search(self.parts[-1]))
                  else None)
        if joined is not None:
            self.parts[-1] = joined
            self._offset -= 1                   # the hyphen is gone from the text
        elif self.parts and same_box:
            self.parts[-1] += ln.text if self.parts[-1].endswith("-") else " " + ln.text
        else:
            self.parts.append(ln.text)
        self._where = (ln.page, ln.box)
        self._offset += nonspace_len(ln.text)

    def text(self) -> str:
        return "\n\n".join(self.parts)


def parse_pdf(data: bytes, fallback_title: str) -> ParsedDocument:
    """Parse the bytes of a PDF into a ParsedDocument whose sections carry page numbers.

    Parameters
    ----------
    data:
        The file's bytes (size already checked).
    fallback_title:
        Title when the PDF declares none (metadata title that is not a file name), shows
        none on its cover (largest font on page 1, before the first heading) and has no
        single top-level heading.

    Returns
    -------
    ParsedDocument

    Raises
    ------
    DocumentError
        ENCRYPTED (a password is needed), CORRUPT (PDFium cannot read it), NO_CONTENT (no
        pages, or only running lines and contents pages), NO_TEXT_LAYER (pages without any
        text, e.g. scanned images).
    """
    pdf = read_pdf(data)
    lines = pdf.lines
    if not lines:
        raise DocumentError(DeadLetterReason.NO_TEXT_LAYER,
                            f"{pdf.n_pages} page(s) without a text layer (scanned images need OCR first)")
    lines = drop_toc_pages(drop_running_lines(lines, pdf.n_pages))
    if not lines:
        raise DocumentError(DeadLetterReason.NO_CONTENT, "the PDF has only running lines and contents pages")
    words = vocabulary(lines)
    if pdf.bookmarks:
        starts = outline_headings(pdf.bookmarks, lines)
    else:
        starts = {i: [h] for i, h in font_headings(lines).items()}
    entries: list[tuple[int, str, _Body]] = [(0, "", _Body(words))]
    skip = 0
    for i in range(len(lines) + 1):
        for level, span, title in starts.get(i, ()):
            entries.append((level, title, _Body(words)))
            skip = max(skip, span)
        if i == len(lines):
            break
        if skip:
            skip -= 1
            continue
        entries[-1][2].add(lines[i])
    first_heading = min(starts, default=len(lines))
    n_top = sum(1 for lvl, _, _ in entries if lvl == 1)
    return build_document([(lvl, title, body.text(), tuple(body.pages)) for lvl, title, body in entries],
                          fallback_title, explicit_title=document_title(pdf.declared_title, lines, first_heading),
                          can_title=[n_top == 1] * len(entries))
