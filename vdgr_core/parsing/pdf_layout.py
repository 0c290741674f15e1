"""PDF reading with PDFium (pypdfium2): the outline, the declared title and laid-out text lines.

PDFium gives each character of a page in content order, with its box, font size and font name
(``pypdfium2.raw``: ``FPDFText_GetLooseCharBox``, ``FPDFText_GetFontSize``,
``FPDFText_GetMatrix``, ``FPDFText_GetFontInfo``); the words it separates by a space of its own
(``FPDFText_IsGenerated``) keep that space, and a hyphen it marks as a line-end break
(``FPDFText_IsHyphen``) is kept as "-" for :func:`vdgr_core.parsing.pdf_clean.join_broken_word`.

Lines and boxes are laid out as pdfminer.six's default ``LAParams`` do: consecutive characters
that overlap vertically by half their height and stand less than two character widths apart
are one line; lines of one height, vertically within half a line of each other, overlapping and
aligned (left, right or centre) are one box, read top to bottom; boxes come in content order.
A definition term set beside its description is then joined to it (:func:`pair_terms`).

PDFium is not thread-safe: one document is read at a time in a process (``_PDFIUM``).
"""
from __future__ import annotations

import ctypes
import re
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from schemas.errors import DeadLetterReason, DocumentError

_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_LIGATURES = re.compile("[\ufb00-\ufb06]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LINE_OVERLAP = 0.5      # two characters of one line overlap by this share of the lower's height
_CHAR_MARGIN = 2.0       # ...and stand less than this many character widths apart...
_GUTTER = 3.0            # ...or this many times the font size (a loose justified line's spaces)
_WORD_MARGIN = 0.1       # a gap of this share of a character's height (or width) is a space too
_LINE_MARGIN = 0.5       # two lines of one box are within this share of a line's height
_TERM_COLUMN = 0.3       # a definition term's box is at most this share of the page wide...
_TERM_GAP = 0.3          # ...and its description starts within this share of the page to its right
_HYPHENS = {"\x02": "-", "\ufffe": "-"}   # PDFium's line-end hyphen (GetUnicode, GetText)
_PDFIUM = threading.Lock()


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
    term: str = ""       # a definition term joined to this line's start (:func:`pair_terms`)


@dataclass(frozen=True)
class Bookmark:
    """One outline entry: depth (0 = top), title, 0-based page (None if unresolved), top y."""

    depth: int
    title: str
    page: Optional[int]
    top: Optional[float]


@dataclass(frozen=True)
class PdfContent:
    """What the parser needs of one PDF: page count, outline, declared title, text lines."""

    n_pages: int
    bookmarks: list[Bookmark]
    declared_title: str
    lines: list[Line]


def clean_text(text: str) -> str:
    """Whitespace collapsed, ligatures expanded (NFKC), the Unicode minus sign made "-", and
    control characters (a glyph a font maps to no character, a bullet mostly) dropped.

    Examples
    --------
    >>> clean_text("\ufb01le  \u2212v")
    'file -v'
    >>> clean_text("\x88 The import command")
    'The import command'
    """
    text = _CONTROL.sub(" ", _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text))
    return " ".join(text.replace("\u2212", "-").split())


# ---------------------------------------------------------------------------- PDFium

def read_pdf(data: bytes) -> PdfContent:
    """Open the PDF's bytes with PDFium and read everything the parser uses.

    Raises
    ------
    DocumentError
        ENCRYPTED (a password is needed, or a security handler PDFium lacks), CORRUPT (PDFium
        cannot open the file or one of its pages), NO_CONTENT (no pages).
    """
    import pypdfium2 as pdfium

    with _PDFIUM:
        try:
            pdf = pdfium.PdfDocument(data, password="")
        except pdfium.PdfiumError as e:
            code = getattr(e, "err_code", None)
            if code in (pdfium.raw.FPDF_ERR_PASSWORD, pdfium.raw.FPDF_ERR_SECURITY):
                raise DocumentError(DeadLetterReason.ENCRYPTED, "the PDF needs a password to open") from None
            if code == pdfium.raw.FPDF_ERR_SUCCESS:    # opened, but not one page
                raise DocumentError(DeadLetterReason.NO_CONTENT, "the PDF has no pages") from None
            raise DocumentError(DeadLetterReason.CORRUPT, f"PDFium: {e}") from None
        try:
            n_pages = len(pdf)
            bookmarks = read_outline(pdf)
            declared = " ".join(str(pdf.get_metadata_value("Title") or "").split())
            lines: list[Line] = []
            for index in range(n_pages):
                lines.extend(_page_lines(pdf, index))
        except pdfium.PdfiumError as e:
            raise DocumentError(DeadLetterReason.CORRUPT, f"PDFium: {e}") from None
        finally:
            pdf.close()
    return PdfContent(n_pages, bookmarks, declared, lines)


def read_outline(pdf) -> list[Bookmark]:
    """The bookmarks of an open ``pypdfium2.PdfDocument`` in document order; the top of a
    bookmark is its destination's top (``/XYZ``, ``/FitH``, ``/FitBH``, ``/FitR``)."""
    import pypdfium2.raw as R

    out: list[Bookmark] = []
    for bm in pdf.get_toc(max_depth=16):
        title = " ".join((bm.get_title() or "").split())
        if not title:
            continue
        dest = bm.get_dest()
        page, top = None, None
        if dest is not None:
            page = dest.get_index()
            mode, pos = dest.get_view()
            if mode == R.PDFDEST_VIEW_XYZ:
                has = [ctypes.c_int() for _ in range(3)]
                xyz = [R.FS_FLOAT() for _ in range(3)]
                if R.FPDFDest_GetLocationInPage(dest.raw, *has, *xyz) and has[1].value:
                    top = float(xyz[1].value)
            elif mode in (R.PDFDEST_VIEW_FITH, R.PDFDEST_VIEW_FITBH) and pos:
                top = float(pos[0])
            elif mode == R.PDFDEST_VIEW_FITR and len(pos) == 4:
                top = float(pos[3])
        out.append(Bookmark(bm.level, title, page, top))
    return out


@dataclass
class _Raw:
    box: int
    x0: float
    x1: float
    y0: float
    y1: float
    text: str
    styles: Counter
    term: str = ""


class _Segment:
    """Characters of one line in the making: text, box and style counts."""

    __slots__ = ("parts", "x0", "x1", "y0", "y1", "styles", "last", "size")

    def __init__(self, ch: str, box: tuple[float, float, float, float], style: tuple[float, bool]):
        self.parts = [ch]
        self.x0, self.y0, self.x1, self.y1 = box
        self.styles: Counter = Counter({style: 1})
        self.last = box
        self.size = style[0]

    def follows(self, box: tuple[float, float, float, float]) -> bool:
        """Whether a character at ``box`` continues this line (pdfminer's ``halign``)."""
        l0, b0, r0, t0 = self.last
        l1, b1, r1, t1 = box
        overlap = min(t0, t1) - max(b0, b1)
        if overlap <= _LINE_OVERLAP * min(t0 - b0, t1 - b1):
            return False
        return max(0.0, l1 - r0, l0 - r1) < max(_CHAR_MARGIN * max(r0 - l0, r1 - l1), _GUTTER * self.size)

    def add(self, ch: str, box: tuple[float, float, float, float], style: tuple[float, bool],
            space: bool) -> None:
        if space or box[0] - self.last[2] > _WORD_MARGIN * max(box[2] - box[0], box[3] - box[1]):
            self.parts.append(" ")
        self.parts.append(ch)
        self.x0, self.y0 = min(self.x0, box[0]), min(self.y0, box[1])
        self.x1, self.y1 = max(self.x1, box[2]), max(self.y1, box[3])
        if ch.strip():
            self.styles[style] += 1
        self.last = box
        self.size = style[0]


def _page_chars(textpage) -> str:
    """The page's characters, one per PDFium character index."""
    import pypdfium2.raw as R

    n = R.FPDFText_CountChars(textpage)
    if n <= 0:
        return ""
    buf = ctypes.create_string_buffer(2 * (n + 1))
    got = R.FPDFText_GetText(textpage, 0, n, ctypes.cast(buf, ctypes.POINTER(ctypes.c_ushort)))
    text = buf.raw[:2 * max(got - 1, 0)].decode("utf-16-le", errors="replace")
    if len(text) != n:     # characters beyond the BMP: one index, two UTF-16 units
        text = "".join(chr(R.FPDFText_GetUnicode(textpage, i) or 0xFFFD) for i in range(n))
    return text


def _segments(textpage) -> list[_Segment]:
    """The page's characters grouped into lines, in content order."""
    import pypdfium2.raw as R

    text = _page_chars(textpage)
    rect, matrix = R.FS_RECTF(), R.FS_MATRIX()
    name, flags = ctypes.create_string_buffer(128), ctypes.c_int()
    bold_of: dict[bytes, bool] = {}
    out: list[_Segment] = []
    seg: Optional[_Segment] = None
    space = False
    for i, ch in enumerate(text):
        ch = _HYPHENS.get(ch, ch)
        if ch.isspace() or not ch:
            space = True
            continue
        if not R.FPDFText_GetLooseCharBox(textpage, i, rect):
            continue
        box = (rect.left, rect.bottom, rect.right, rect.top)
        if box[2] <= box[0] and box[3] <= box[1]:
            continue
        size = R.FPDFText_GetFontSize(textpage, i)
        if R.FPDFText_GetMatrix(textpage, i, matrix):
            size *= abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5
        R.FPDFText_GetFontInfo(textpage, i, name, len(name), flags)
        font = name.value
        bold = bold_of.get(font)
        if bold is None:
            bold = bold_of[font] = bool(_BOLD_FONT.search(font.decode("latin-1").split("+", 1)[-1]))
        style = (round(size * 2) / 2, bold)
        if seg is not None and seg.follows(box):
            seg.add(ch, box, style, space)
        else:
            seg = _Segment(ch, box, style)
            out.append(seg)
        space = False
    return out


def _boxes(segs: list[_Segment]) -> list[int]:
    """The box of each line (pdfminer's ``group_textlines``); boxes numbered in content order."""
    parent = list(range(len(segs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    order = sorted(range(len(segs)), key=lambda k: -segs[k].y1)
    reach = _LINE_MARGIN * max((s.y1 - s.y0 for s in segs), default=0.0)
    for n, i in enumerate(order):
        a = segs[i]
        for j in order[n + 1:]:        # every line whose top is not above a's, nearest first
            b = segs[j]
            if b.y1 <= a.y0 - reach:
                break
            d = _LINE_MARGIN * max(a.y1 - a.y0, b.y1 - b.y0)
            if b.x1 <= a.x0 or a.x1 <= b.x0 or b.y1 <= a.y0 - d or a.y1 + d <= b.y0:
                continue
            if abs((a.y1 - a.y0) - (b.y1 - b.y0)) > d:
                continue
            if (abs(a.x0 - b.x0) <= d or abs(a.x1 - b.x1) <= d
                    or abs((a.x0 + a.x1) - (b.x0 + b.x1)) / 2 <= d):
                parent[find(j)] = find(i)
    number: dict[int, int] = {}
    return [number.setdefault(find(i), len(number)) for i in range(len(segs))]


def _column_boxes(segs: list[_Segment], boxes: list[int], page_width: float) -> set[int]:
    """Boxes that are columns of text: wider than a definition term's column, with another such
    box beside them (vertically overlapping, horizontally apart)."""
    extent: dict[int, list[float]] = {}
    for s, b in zip(segs, boxes):
        e = extent.setdefault(b, [s.x0, s.y0, s.x1, s.y1])
        e[0], e[1], e[2], e[3] = min(e[0], s.x0), min(e[1], s.y0), max(e[2], s.x1), max(e[3], s.y1)
    wide = [b for b, e in extent.items() if e[2] - e[0] > _TERM_COLUMN * page_width]
    out: set[int] = set()
    for n, a in enumerate(wide):
        for b in wide[n + 1:]:
            ea, eb = extent[a], extent[b]
            if (ea[2] <= eb[0] or eb[2] <= ea[0]) and min(ea[3], eb[3]) > max(ea[1], eb[1]):
                out.update((a, b))
    return out


def _rows(segs: list[_Segment], boxes: list[int], page_width: float) -> list[_Raw]:
    """The page's lines in reading order: content order, except that the lines of a column of
    text (:func:`_column_boxes`) are read together, top to bottom; pieces of one line in one box
    (a justified line split at a wide space) are one line again, left to right."""
    columns = _column_boxes(segs, boxes, page_width)
    first: dict[int, int] = {}
    for k, b in enumerate(boxes):
        first.setdefault(b, k)

    def reading(k: int) -> tuple[int, float, float]:
        return (first[boxes[k]], -segs[k].y1, segs[k].x0) if boxes[k] in columns else (k, 0.0, 0.0)

    rows: list[tuple[int, list[_Segment]]] = []
    for k in sorted(range(len(segs)), key=reading):
        s = segs[k]
        if rows and rows[-1][0] == boxes[k]:
            row = rows[-1][1]
            lo, hi = max(r.y0 for r in row), min(r.y1 for r in row)
            if min(hi, s.y1) - max(lo, s.y0) > _LINE_OVERLAP * min(hi - lo, s.y1 - s.y0):
                row.append(s)
                continue
        rows.append((boxes[k], [s]))
    out: list[_Raw] = []
    for box, row in rows:
        row.sort(key=lambda s: s.x0)
        text = clean_text(" ".join("".join(s.parts) for s in row))
        if text:
            out.append(_Raw(box, min(s.x0 for s in row), max(s.x1 for s in row), min(s.y0 for s in row),
                            max(s.y1 for s in row), text, sum((s.styles for s in row), Counter())))
    return out


def _page_lines(pdf, index: int) -> list[Line]:
    """The text lines of one page in reading order (:func:`_rows`), definition terms joined to
    their descriptions, each line with the space above and below it."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            segs = _segments(textpage.raw)
        finally:
            textpage.close()
        width = float(page.get_width())
    finally:
        page.close()
    raws = pair_terms(_rows(segs, _boxes(segs), width), width)
    lines = []
    for k, r in enumerate(raws):
        before = raws[k - 1].y0 - r.y1 if k and raws[k - 1].y0 >= r.y1 - 1.0 else None
        after = r.y0 - raws[k + 1].y1 if k + 1 < len(raws) and r.y0 >= raws[k + 1].y1 - 1.0 else None
        size, bold, uniform = _style_of(r.styles)
        lines.append(Line(index + 1, r.box, r.y1, r.text, size, bold, uniform, r.x0, r.y0, before, after,
                          r.term))
    return lines


def _style_of(styles: Counter) -> tuple[float, bool, bool]:
    if not styles:
        return 0.0, False, False
    (size, bold), n = styles.most_common(1)[0]
    return size, bold, n >= 0.9 * sum(styles.values())


def pair_terms(raws: list[_Raw], page_width: float) -> list[_Raw]:
    """Join each definition term to the description beside it: a short line (at most
    ``_TERM_COLUMN`` of the page wide) is prepended to the nearest line that
    starts to its right (within ``_TERM_GAP`` of the page) on the same baseline, when the term's
    box is narrow too or the description's box starts inside the term's box (a list under a
    paragraph), never across a gutter between two columns of text.

    Right-most terms are joined first, so a row of three boxes becomes one line. The joined
    line keeps its term (``_Raw.term``), so the entries of a definition list can be told apart.
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
                              r.styles + t.styles, t.text)
            gone.add(i)
    return [r for i, r in enumerate(raws) if i not in gone]
