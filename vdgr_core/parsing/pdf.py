"""PDF parser: the outline (bookmarks) is the table of contents, else headings by font.

pypdf opens the file (encryption, outline and the page each bookmark points to); pdfminer.six
lays out the text of every page into lines with their font size, weight and position. Without
an outline, a line set entirely in a font larger than the body text is a heading, and so is a
bold line at body size that is also numbered, set out to the left of the body text or set off
by space above it; a line of option flags or a path ("-v -x -D", "/dev/stdin") is never one.
The larger font the higher level. Page numbers are physical and 1-based; each section records
on which page its text continues (``Section.pages``), so a chunk knows its first page.

Cleaning, in this order: a definition term set beside its description (a narrow column of
terms, "-a" beside "Each variable ...") is joined to the description's first line, so term
and meaning stay in one block; ligatures are expanded (NFKC) and the Unicode minus becomes
"-"; running headers and footers (a line at a page's top or bottom recurring at the same height,
digits ignored, on three pages when it holds a number, else on a quarter of the pages), bare
page numbers and table-of-contents or index pages (five or more dot-leader lines) are dropped; a word hyphenated at a line end is joined
("sig-" + "nal" -> "signal") unless the document writes the hyphenated form elsewhere and never
the joined one ("non-" + "zero" stays "non-zero").

``PARSER_VERSION`` names these rules; it is part of the content rules recorded in the manifest
(``vdgr_core.safety.content_rules``), so a change re-parses every document on the next update.
"""
from __future__ import annotations

import io
import re
import statistics
import unicodedata
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
_TERM_COLUMN = 0.3       # a definition term's box is at most this share of the page wide...
_TERM_GAP = 0.3          # ...and its description starts within this share of the page to its right
_OUTDENT_PT = 3.0        # a heading set this far left of the body text's margin is set out
_RUNNING_PAGES = 3       # a top or bottom line recurring on this many pages is a running line
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*(?:\d+|[ivxlc]+)?\s*$", re.IGNORECASE)
_TOC_LINES = 5           # a page with this many dot-leader lines (and a fifth of its lines)...
_TOC_SHARE = 0.2         # ...is a table of contents or an index
_FLAG_OR_PATH = re.compile(r"^\s*(?:[-\u2212\u2013+/\[]|\S*/\S*$)")
_LIGATURES = re.compile("[\ufb00-\ufb06]")
_CID = re.compile(r"\(cid:\d+\)")
_BROKEN = re.compile(r"([A-Za-z]+)[-\u00ad]$")
_WORD_START = re.compile(r"^([A-Za-z]+)")
_HYPHENATED = re.compile(r"\b([A-Za-z]+)-([a-z]+)\b")

# the rules below (cleaning, pairing, headings); part of the content rules in the manifest
PARSER_VERSION = "pdf-4"


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
    x0: float = 0.0      # left edge
    bottom: Optional[float] = None       # bottom y (None: the line's top less its size)
    gap_before: Optional[float] = None   # space to the line above it on its page (None: none above)
    gap_after: Optional[float] = None    # space to the line below it on its page


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


def clean_text(text: str) -> str:
    """Whitespace collapsed, ligatures expanded (NFKC), the Unicode minus sign made "-", and
    pdfminer's "(cid:N)" for a glyph the font maps to no character (a bullet, mostly) dropped.

    Examples
    --------
    >>> clean_text("\ufb01le  \u2212v")
    'file -v'
    >>> clean_text("(cid:136) The import command")
    'The import command'
    """
    text = _CID.sub(" ", _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text))
    return " ".join(text.replace("\u2212", "-").split())


@dataclass
class _Raw:
    box: int
    x0: float
    x1: float
    y0: float
    y1: float
    text: str
    styles: Counter


def _styles(line) -> Counter:
    from pdfminer.layout import LTChar

    styles: Counter = Counter()
    for ch in line:
        if isinstance(ch, LTChar) and ch.get_text().strip():
            font = ch.fontname.split("+", 1)[-1]
            styles[(round(ch.size * 2) / 2, bool(_BOLD_FONT.search(font)))] += 1
    return styles


def pair_terms(raws: list[_Raw], page_width: float) -> list[_Raw]:
    """Join each definition term to the description beside it: a short line (at most
    ``_TERM_COLUMN`` of the page wide) is prepended to the nearest line that
    starts to its right (within ``_TERM_GAP`` of the page) on the same baseline, when the term's
    box is narrow too or the description's box starts inside the term's box (a list under a
    paragraph), never across a gutter between two columns of text.

    Right-most terms are joined first, so a row of three boxes becomes one line.
    """
    extent: dict[int, tuple[float, float]] = {}
    for r in raws:
        lo, hi = extent.get(r.box, (r.x0, r.x1))
        extent[r.box] = (min(lo, r.x0), max(hi, r.x1))
    short = _TERM_COLUMN * page_width
    gone: set[int] = set()
    order = sorted((i for i, r in enumerate(raws) if r.x1 - r.x0 <= short), key=lambda i: -raws[i].x1)
    for i in order:
        t = raws[i]
        t_lo, t_hi = extent[t.box]
        height = max(t.y1 - t.y0, 1.0)
        best = None
        for j, r in enumerate(raws):
            if j == i or j in gone:
                continue
            gap = r.x0 - t.x1
            if not 0 < gap <= _TERM_GAP * page_width:
                continue
            if t_hi - t_lo > short and extent[r.box][0] >= t_hi:
                continue
            if abs((r.y0 + r.y1) / 2 - (t.y0 + t.y1) / 2) > 0.5 * min(height, max(r.y1 - r.y0, 1.0)):
                continue
            if best is None or gap < raws[best].x0 - t.x1:
                best = j
        if best is not None:
            r = raws[best]
            raws[best] = _Raw(r.box, t.x0, r.x1, min(r.y0, t.y0), max(r.y1, t.y1), f"{t.text} {r.text}",
                              r.styles + t.styles)
            gone.add(i)
    return [r for i, r in enumerate(raws) if i not in gone]


def _style_of(styles: Counter) -> tuple[float, bool, bool]:
    if not styles:
        return 0.0, False, False
    (size, bold), n = styles.most_common(1)[0]
    return size, bold, n >= 0.9 * sum(styles.values())


def read_lines(data: bytes) -> list[Line]:
    """Every non-blank text line of the PDF, in pdfminer's reading order, page by page.

    Definition terms are joined to the description beside them (:func:`pair_terms`), the text
    is cleaned (:func:`clean_text`), and each line knows the space above and below it.
    """
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTTextBox, LTTextLine
    from pdfminer.pdfdocument import PDFPasswordIncorrect
    from pdfminer.psexceptions import PSException

    lines: list[Line] = []
    try:
        for page_no, page in enumerate(extract_pages(io.BytesIO(data), password="", laparams=LAParams()), 1):
            raws: list[_Raw] = []
            boxes = [el for el in page if isinstance(el, LTTextBox)]
            for box_no, box in enumerate(boxes):
                for ln in box:
                    if isinstance(ln, LTTextLine):
                        text = clean_text(ln.get_text())
                        if text:
                            raws.append(_Raw(box_no, float(ln.x0), float(ln.x1), float(ln.y0), float(ln.y1),
                                             text, _styles(ln)))
            raws = pair_terms(raws, float(page.width))
            for k, r in enumerate(raws):
                before = raws[k - 1].y0 - r.y1 if k and raws[k - 1].y0 >= r.y1 - 1.0 else None
                after = r.y0 - raws[k + 1].y1 if k + 1 < len(raws) and r.y0 >= raws[k + 1].y1 - 1.0 else None
                size, bold, uniform = _style_of(r.styles)
                lines.append(Line(page_no, r.box, r.y1, r.text, size, bold, uniform, r.x0, r.y0, before, after))
    except PDFPasswordIncorrect:
        raise DocumentError(DeadLetterReason.ENCRYPTED, "the PDF needs a password to open") from None
    except (PSException, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError) as e:
        raise DocumentError(DeadLetterReason.CORRUPT, f"{type(e).__name__}: {e}") from None
    return lines


def drop_running_lines(lines: Sequence[Line], n_pages: int) -> list[Line]:
    """Lines without running headers/footers and bare page numbers at a page's top or bottom.

    A running line is one whose text (digits ignored) recurs at the same height on at least
    half of the pages (and three), or a line in the top or bottom row of its page that recurs
    so on a quarter of the pages and five (an even or odd page's title), or on three when it holds
    a number (a chapter's running title, "Chapter 4: Shell Builtins"); a bare "Example:" ending
    three pages is text.
    """
    def key(ln: Line) -> tuple[str, int]:
        return re.sub(r"\d+", "#", ln.text.casefold()), round(ln.top / 4)

    pages_of: dict[tuple[str, int], set[int]] = defaultdict(set)
    for ln in lines:
        pages_of[key(ln)].add(ln.page)
    threshold = max(_RUNNING_PAGES, (n_pages + 1) // 2)
    running = {k for k, pages in pages_of.items() if len(pages) >= threshold}
    by_page: dict[int, list[int]] = defaultdict(list)
    for i, ln in enumerate(lines):
        by_page[ln.page].append(i)
    edges = set()
    for idx in by_page.values():
        top, low = max(lines[i].top for i in idx), min(_bottom(lines[i]) for i in idx)
        edges.update(i for i in idx if lines[i].top >= top - _TOP_TOLERANCE or _bottom(lines[i]) <= low + _TOP_TOLERANCE)
        edges.update((idx[0], idx[-1]))
    def running_edge(ln: Line) -> bool:
        n = len(pages_of[key(ln)])
        return n >= max(5, n_pages / 4) or (n >= _RUNNING_PAGES and "#" in key(ln)[0])

    return [ln for i, ln in enumerate(lines)
            if key(ln) not in running and not (i in edges and (_PAGE_NUMBER.match(ln.text) or running_edge(ln)))]


def _bottom(ln: Line) -> float:
    return ln.bottom if ln.bottom is not None else ln.top - ln.size


def drop_toc_pages(lines: Sequence[Line]) -> list[Line]:
    """Lines without the pages that are a table of contents or an index: pages with at least
    ``_TOC_LINES`` lines ending in a dot leader (". . . . 12") that, with the lines holding only
    a page number, make a fifth of their lines or more."""
    per_page: Counter = Counter(ln.page for ln in lines)
    leaders: Counter = Counter(ln.page for ln in lines if _DOT_LEADER.search(ln.text))
    numbers: Counter = Counter(ln.page for ln in lines if _PAGE_NUMBER.match(ln.text))
    toc = {p for p, n in leaders.items() if n >= _TOC_LINES and n + numbers[p] >= _TOC_SHARE * per_page[p]}
    return [ln for ln in lines if ln.page not in toc]


def join_broken_word(before: str, after: str, hyphenated: set[str], joined: set[str]) -> Optional[str]:
    """``before`` and ``after`` as one line when ``before`` ends in a word hyphenated at the
    line end ("sig-" + "nal ..." -> "signal ..."); None when it does not, or when the hyphen is
    the word's own: the document writes "non-zero" elsewhere and never "nonzero".

    Examples
    --------
    >>> join_broken_word("a sig-", "nal arrives", set(), set())
    'a signal arrives'
    >>> join_broken_word("a non-", "zero status", {"non-zero"}, set()) is None
    True
    >>> join_broken_word("see PARAME-", "TERS below", set(), set())
    'see PARAMETERS below'
    """
    m, n = _BROKEN.search(before), _WORD_START.match(after)
    if not m or not n:
        return None
    head, tail = m.group(1), n.group(1)
    if not (tail[0].islower() or (head[-2:].isupper() and tail.isupper())):   # "sig-nal", "PARAME-TERS"
        return None
    head, tail = head.casefold(), tail.casefold()
    if before.endswith("-") and f"{head}-{tail}" in hyphenated and f"{head}{tail}" not in joined:
        return None
    return before[:-1] + after


def _vocabulary(lines: Sequence[Line]) -> tuple[set[str], set[str]]:
    """(hyphenated words written inside a line, every word) of the document, casefolded."""
    hyphenated, words = set(), set()
    for ln in lines:
        low = ln.text.casefold()
        hyphenated.update(f"{a}-{b}" for a, b in _HYPHENATED.findall(low))
        words.update(re.findall(r"[a-z]+", low))
    return hyphenated, words


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
            and any(c.isalpha() for c in ln.text) and not _HEADING_END.search(ln.text)
            and not _FLAG_OR_PATH.match(ln.text))


def _body_layout(lines: Sequence[Line], body: tuple[float, bool]) -> tuple[float, float]:
    """(left margin, space between two lines of a paragraph) of the body text: the leftmost
    edge on which a tenth or more of the body-style characters start (descriptions indented
    under their terms are not the margin) and the median gap inside a box."""
    margins: Counter = Counter()
    gaps = []
    for i, ln in enumerate(lines):
        if (ln.size, ln.bold) == body:
            margins[round(ln.x0)] += len(ln.text)
            if i and ln.gap_before is not None and lines[i - 1].box == ln.box and lines[i - 1].page == ln.page:
                gaps.append(ln.gap_before)
    total = sum(margins.values())
    margin = min((x for x, n in margins.items() if n >= 0.1 * total), default=0.0)
    return float(margin), statistics.median(gaps) if gaps else 0.0


def font_headings(lines: Sequence[Line]) -> dict[int, tuple[int, int, str]]:
    """Headings found by font: first line index -> (level, lines it spans, title).

    The body font is the size and weight of most characters. A line set wholly in a font at
    least 15% (and 1 pt) larger is a heading. A line in bold at body size or larger (when the
    body is not bold) is one only when it is also numbered ("2.1 Naming"), set out to the left
    of the body's margin, or set off by space: more space above it than below it and than
    between the lines of a paragraph, and the next line not indented further (that is a
    definition term over its description, "BASHOPTS" above "A colon-separated list"), and it
    holds no "[" (a command synopsis, "history [n]") and starts no further right than the body's
    margin (a term in an indented list, "function"). A line of option flags or a path is never a heading
    ("-v -x -D", "/dev/stdin"). Consecutive heading lines of one style in one box are one
    heading. Larger fonts give higher levels (bold before regular at one size), at most six.
    """
    if not lines:
        return {}
    body_size, body_bold = _body_style(lines)
    margin, line_gap = _body_layout(lines, (body_size, body_bold))

    def set_off(i: int) -> bool:
        ln = lines[i]
        if _NUMBER_PREFIX.match(ln.text) or ln.x0 < margin - _OUTDENT_PT:
            return True
        nxt = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].page == ln.page else None
        return (ln.gap_before is not None and ln.gap_before > line_gap + 0.3 * body_size
                and (ln.gap_after is None or ln.gap_after < ln.gap_before - 0.5)
                and (nxt is None or nxt.x0 <= ln.x0 + _OUTDENT_PT))

    def heading_style(i: int) -> bool:
        ln = lines[i]
        if not _may_be_heading(ln):
            return False
        if ln.size >= max(body_size * _LARGER, body_size + _LARGER_PT):
            return True
        return (ln.bold and not body_bold and ln.size >= body_size and "[" not in ln.text
                and ln.x0 <= margin + _OUTDENT_PT and set_off(i))

    candidates = [i for i in range(len(lines)) if heading_style(i)]
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
        while (j < len(lines) and lines[j].page == ln.page and lines[j].box == ln.box
               and (lines[j].size, lines[j].bold) == (ln.size, ln.bold) and _may_be_heading(lines[j])
               and (j in i_set or abs(lines[j].x0 - ln.x0) <= _OUTDENT_PT)):
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
        # a word broken at the end of a box goes on in the next box (or page) in lower case
        joined = (join_broken_word(self.parts[-1], ln.text, *self.vocabulary)
                  if self.parts and (same_box or ln.text[:1].islower()) else None)
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
    lines = drop_toc_pages(drop_running_lines(lines, n_pages))
    if not lines:
        raise DocumentError(DeadLetterReason.NO_CONTENT, "the PDF has only running lines and contents pages")
    vocabulary = _vocabulary(lines)
    if bookmarks:
        starts = outline_headings(bookmarks, lines)
    else:
        starts = {i: [h] for i, h in font_headings(lines).items()}
    entries: list[tuple[int, str, _Body]] = [(0, "", _Body(vocabulary))]
    skip = 0
    for i in range(len(lines) + 1):
        for level, span, title in starts.get(i, ()):
            entries.append((level, title, _Body(vocabulary)))
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
