"""PDF parser: the outline (bookmarks) is the table of contents, else headings by font.

pypdf opens the file (encryption, outline and the page each bookmark points to); pdfminer.six
lays out the text of every page into lines with their font size and weight. Without an outline,
a line set entirely in a font larger than the body text (or bold at body size) is a heading,
the larger font the higher level. Page numbers are physical and 1-based; each section records
on which page its text continues (``Section.pages``), so a chunk knows its first page.

Running headers and footers (a line repeated at the same height on most pages, or a bare page
number at the top or bottom of a page) are dropped.
"""
from __future__ import annotations

import io
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Optional, Sequence

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.toc import build_document, nonspace_len

_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^\s*(?:page\s*)?\d{1,5}(?:\s*(?:/|of)\s*\d{1,5})?\s*$", re.IGNORECASE)
_HEADING_END = re.compile(r"[.,;:]$")
_NUMBER_PREFIX = re.compile(r"^\s*(?:\d+|[A-Z])(?:\.\d+)*\.?\s+")
_FILE_LIKE_TITLE = re.compile(r"\.(?:docx?|pdf|tex|dvi|rtf|odt|txt|indd)$|^microsoft\b|^untitled$", re.IGNORECASE)
_MAX_HEADING_CHARS = 120
_MAX_HEADING_WORDS = 16
_MAX_LEVELS = 6
_LARGER = 1.15           # a heading font is at least this much larger than the body font...
_LARGER_PT = 1.0         # ...and at least this many points larger
_MAX_HEADING_SHARE = 0.4 # a style on more lines than this share of all lines is body text
_TOP_TOLERANCE = 2.0     # points between a bookmark's target height and its line's top


@dataclass(frozen=True)
class Line:
    """One laid-out text line: page (1-based), box number on its page, top y, text, style."""

    page: int
    box: int
    top: float
    text: str
    size: float          # dominant font size (rounded to 0.5 pt)
    bold: bool           # dominant font is bold
    uniform: bool        # at least 90% of the characters are in the dominant style


@dataclass(frozen=True)
class Bookmark:
    """One outline entry: depth (0 = top), title, 0-based page (None if unresolved), top y."""

    depth: int
    title: str
    page: Optional[int]
    top: Optional[float]


# ---------------------------------------------------------------------------- reading

def _open(data: bytes):
    """A pypdf reader, decrypted with the empty password when the file is encrypted."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(DeadLetterReason.ENCRYPTED, "the PDF needs a password to open")
        n_pages = len(reader.pages)
    except DocumentError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError) as e:
        if "crypt" in str(e).lower() or "password" in str(e).lower():
            raise DocumentError(DeadLetterReason.ENCRYPTED, f"{type(e).__name__}: {e}") from None
        raise DocumentError(DeadLetterReason.CORRUPT, f"{type(e).__name__}: {e}") from None
    if n_pages == 0:
        raise DocumentError(DeadLetterReason.NO_CONTENT, "the PDF has no pages")
    return reader


def read_outline(reader) -> list[Bookmark]:
    """The bookmarks of an open pypdf reader in document order (an unreadable outline is none)."""
    from pypdf.errors import PyPdfError

    out: list[Bookmark] = []

    def walk(items, depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            if not title:
                continue
            try:
                page = reader.get_destination_page_number(item)
            except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError):
                page = None
            top = getattr(item, "top", None)
            try:
                top = float(top) if top is not None else None
            except (TypeError, ValueError):
                top = None
            out.append(Bookmark(depth, title, page if page is not None and page >= 0 else None, top))

    try:
        walk(reader.outline, 0)
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError):
        return []
    return out


def _line_style(line) -> tuple[float, bool, bool]:
    from pdfminer.layout import LTChar

    styles: Counter = Counter()
    for ch in line:
        if isinstance(ch, LTChar) and ch.get_text().strip():
            font = ch.fontname.split("+", 1)[-1]
            styles[(round(ch.size * 2) / 2, bool(_BOLD_FONT.search(font)))] += 1
    if not styles:
        return 0.0, False, False
    (size, bold), n = styles.most_common(1)[0]
    return size, bold, n >= 0.9 * sum(styles.values())


def read_lines(data: bytes) -> list[Line]:
    """Every non-blank text line of the PDF, in pdfminer's reading order, page by page."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTTextBox, LTTextLine
    from pdfminer.pdfdocument import PDFPasswordIncorrect
    from pdfminer.psexceptions import PSException

    lines: list[Line] = []
    try:
        for page_no, page in enumerate(extract_pages(io.BytesIO(data), password="", laparams=LAParams()), 1):
            boxes = [el for el in page if isinstance(el, LTTextBox)]
            for box_no, box in enumerate(boxes):
                for ln in box:
                    if not isinstance(ln, LTTextLine):
                        continue
                    text = " ".join(ln.get_text().split())
                    if text:
                        size, bold, uniform = _line_style(ln)
                        lines.append(Line(page_no, box_no, float(ln.y1), text, size, bold, uniform))
    except PDFPasswordIncorrect:
        raise DocumentError(DeadLetterReason.ENCRYPTED, "the PDF needs a password to open") from None
    except (PSException, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError) as e:
        raise DocumentError(DeadLetterReason.CORRUPT, f"{type(e).__name__}: {e}") from None
    return lines


def drop_running_lines(lines: Sequence[Line], n_pages: int) -> list[Line]:
    """Lines without running headers/footers and bare page numbers at a page's top or bottom.

    A running line is one whose text (digits ignored) recurs at the same height on at least
    half of the pages, and on at least three.
    """
    def key(ln: Line) -> tuple[str, int]:
        return re.sub(r"\d+", "#", ln.text.casefold()), round(ln.top / 4)

    pages_of: dict[tuple[str, int], set[int]] = defaultdict(set)
    for ln in lines:
        pages_of[key(ln)].add(ln.page)
    threshold = max(3, (n_pages + 1) // 2)
    running = {k for k, pages in pages_of.items() if len(pages) >= threshold}
    by_page: dict[int, list[int]] = defaultdict(list)
    for i, ln in enumerate(lines):
        by_page[ln.page].append(i)
    edges = {idx[j] for idx in by_page.values() for j in (0, -1)}
    return [ln for i, ln in enumerate(lines)
            if key(ln) not in running and not (i in edges and _PAGE_NUMBER.match(ln.text))]


# ---------------------------------------------------------------------------- headings

def _norm(text: str) -> str:
    return re.sub(r"\W+", "", text).casefold()


def _body_style(lines: Sequence[Line]) -> tuple[float, bool]:
    """Size and weight of most characters."""
    weight: Counter = Counter()
    for ln in lines:
        weight[(ln.size, ln.bold)] += len(ln.text)
    return weight.most_common(1)[0][0]


def _may_be_heading(ln: Line) -> bool:
    return (ln.uniform and len(ln.text) <= _MAX_HEADING_CHARS and len(ln.text.split()) <= _MAX_HEADING_WORDS
            and any(c.isalpha() for c in ln.text) and not _HEADING_END.search(ln.text))


def font_headings(lines: Sequence[Line]) -> dict[int, tuple[int, int, str]]:
    """Headings found by font: first line index -> (level, lines it spans, title).

    The body font is the size and weight of most characters. A line set wholly in a font at
    least 15% (and 1 pt) larger, or in bold at body size or larger when the body is not bold,
    is a heading; consecutive heading lines of one style in one box are one heading. Larger
    fonts give higher levels (bold before regular at one size), at most six.
    """
    if not lines:
        return {}
    body_size, body_bold = _body_style(lines)

    def heading_style(ln: Line) -> bool:
        if not _may_be_heading(ln):
            return False
        if ln.size >= max(body_size * _LARGER, body_size + _LARGER_PT):
            return True
        return ln.bold and not body_bold and ln.size >= body_size

    candidates = [i for i, ln in enumerate(lines) if heading_style(ln)]
    per_style = Counter((lines[i].size, lines[i].bold) for i in candidates)
    styles = sorted((s for s, n in per_style.items() if n <= _MAX_HEADING_SHARE * len(lines)),
                    key=lambda s: (-s[0], not s[1]))
    level_of = {s: min(n + 1, _MAX_LEVELS) for n, s in enumerate(styles)}
    out: dict[int, tuple[int, int, str]] = {}
    i_set = set(i for i in candidates if (lines[i].size, lines[i].bold) in level_of)
    i = 0
    while i < len(lines):
        if i not in i_set:
            i += 1
            continue
        ln = lines[i]
        j = i + 1
        while (j in i_set and lines[j].page == ln.page and lines[j].box == ln.box
               and (lines[j].size, lines[j].bold) == (ln.size, ln.bold)):
            j += 1
        out[i] = (level_of[(ln.size, ln.bold)], j - i, " ".join(x.text for x in lines[i:j]))
        i = j
    return out


def outline_headings(bookmarks: Sequence[Bookmark], lines: Sequence[Line]) -> dict[int, list[tuple[int, int, str]]]:
    """Place bookmarks in the line stream: line index -> [(level, lines the title spans, title)].

    A bookmark starts at the line on its page (at or after the previous bookmark) whose text is
    its title (which is then not body text, up to three lines long); failing that, at the first
    line of its page at or below its target height. A bookmark without a resolvable page, or
    pointing before the previous one, starts where the previous one did.
    """
    out: dict[int, list[tuple[int, int, str]]] = defaultdict(list)
    cursor = 0
    for bm in bookmarks:
        level = min(bm.depth + 1, _MAX_LEVELS)
        at, span = cursor, 0
        if bm.page is not None:
            page = bm.page + 1
            at, span = _find_title(bm.title, page, lines, cursor)
            if span == 0:
                at = next((i for i in range(cursor, len(lines))
                           if lines[i].page > page or (lines[i].page == page and (
                               bm.top is None or lines[i].top <= bm.top + _TOP_TOLERANCE))), len(lines))
        out[at].append((level, span, bm.title))
        cursor = at + span
    return out


def _find_title(title: str, page: int, lines: Sequence[Line], start: int) -> tuple[int, int]:
    """(first line, number of lines) of ``title`` on ``page`` from ``start``; (start, 0) if absent.

    The text may number the heading where the bookmark does not ("2.1 Naming" for "Naming").
    """
    want = _norm(title)
    for i in range(start, len(lines)):
        if lines[i].page < page:
            continue
        if lines[i].page > page or not want:
            break
        got = ""
        for j in range(i, min(i + 3, len(lines))):
            if lines[j].page != page:
                break
            text = lines[j].text if j > i else _NUMBER_PREFIX.sub("", lines[j].text)
            got += _norm(text)
            if got == want or (j == i and _norm(lines[j].text) == want):
                return i, j - i + 1
            if not want.startswith(got):
                break
    return start, 0


def document_title(reader, lines: Sequence[Line], first_heading: int) -> Optional[str]:
    """The title the PDF declares (metadata, unless it is a file name) or shows on its cover.

    The cover title is the line in the largest font, larger than the body font, on the first
    page before the first heading.
    """
    try:
        meta = reader.metadata
        declared = " ".join(str(meta.title or "").split()) if meta is not None else ""
    except Exception:   # noqa: BLE001 - a broken info dictionary only loses the declared title
        declared = ""
    if declared and any(c.isalpha() for c in declared) and not _FILE_LIKE_TITLE.search(declared):
        return declared
    cover = [ln for ln in lines[:first_heading] if ln.page == 1 and _may_be_heading(ln)]
    if not cover:
        return None
    body_size, _ = _body_style(lines)
    best = max(cover, key=lambda ln: ln.size)
    return best.text if best.size >= max(body_size * _LARGER, body_size + _LARGER_PT) else None


# ---------------------------------------------------------------------------- assembly

class _Body:
    """Text under one heading, with the page on which each part of it starts."""

    def __init__(self):
        self.parts: list[str] = []
        self.pages: list[tuple[int, int]] = []
        self._offset = 0
        self._where: Optional[tuple[int, int]] = None   # (page, box) of the last line

    def add(self, ln: Line) -> None:
        if not self.pages or self.pages[-1][1] != ln.page:
            self.pages.append((self._offset, ln.page))
        if self.parts and self._where == (ln.page, ln.box):
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
        ENCRYPTED (a password is needed), CORRUPT (pypdf or pdfminer cannot read it),
        NO_CONTENT (no pages), NO_TEXT_LAYER (pages without any text, e.g. scanned images).
    """
    reader = _open(data)
    n_pages = len(reader.pages)
    bookmarks = read_outline(reader)
    lines = read_lines(data)
    if not lines:
        raise DocumentError(DeadLetterReason.NO_TEXT_LAYER,
                            f"{n_pages} page(s) without a text layer (scanned images need OCR first)")
    lines = drop_running_lines(lines, n_pages)
    if bookmarks:
        starts = outline_headings(bookmarks, lines)
    else:
        starts = {i: [h] for i, h in font_headings(lines).items()}
    entries: list[tuple[int, str, _Body]] = [(0, "", _Body())]
    skip = 0
    for i in range(len(lines) + 1):
        for level, span, title in starts.get(i, ()):
            entries.append((level, title, _Body()))
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
                          fallback_title, explicit_title=document_title(reader, lines, first_heading),
                          can_title=[n_top == 1] * len(entries))
