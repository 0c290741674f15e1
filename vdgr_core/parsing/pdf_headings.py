"""PDF headings: bookmarks placed in the line stream, or headings found by font, numbering and
spacing when a PDF has no bookmarks; and the title a PDF declares or shows on its cover."""
from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from typing import Optional, Sequence

from vdgr_core.parsing.pdf_layout import Bookmark, Line

_HEADING_END = re.compile(r"[.,;:]$")
_NUMBER_PREFIX = re.compile(r"^\s*(?:\d+|[A-Z])(?:\.\d+)*\.?\s+")
_FILE_LIKE_TITLE = re.compile(r"\.(?:docx?|pdf|tex|dvi|rtf|odt|txt|indd)$|^microsoft\b|^untitled$", re.IGNORECASE)
_FLAG_OR_PATH = re.compile(r"^\s*(?:[-\u2212\u2013+/\[]|\S*/\S*$)")
_MAX_HEADING_CHARS = 120
_MAX_HEADING_WORDS = 16
_MAX_LEVELS = 6
_LARGER = 1.15           # a heading font is at least this much larger than the body font...
_LARGER_PT = 1.0         # ...and at least this many points larger
_MAX_HEADING_SHARE = 0.4 # a style on more lines than this share of all lines is body text
_TOP_TOLERANCE = 2.0     # points between a bookmark's target height and its line's top
_OUTDENT_PT = 3.0        # a heading set this far left of the body text's margin is set out


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


def document_title(declared: str, lines: Sequence[Line], first_heading: int) -> Optional[str]:
    """The title the PDF declares (its metadata ``Title``, unless a file name) or shows on its
    cover.

    The cover title is the line in the largest font, larger than the body font, on the first
    page before the first heading.
    """
    declared = " ".join(declared.split())
    if declared and any(c.isalpha() for c in declared) and not _FILE_LIKE_TITLE.search(declared):
        return declared
    cover = [ln for ln in lines[:first_heading] if ln.page == 1 and _may_be_heading(ln)]
    if not cover:
        return None
    body_size, _ = _body_style(lines)
    best = max(cover, key=lambda ln: ln.size)
    return best.text if best.size >= max(body_size * _LARGER, body_size + _LARGER_PT) else None
