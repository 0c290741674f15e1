"""PDF text cleaning over laid-out lines: running headers and footers, bare page numbers,
contents and index pages, and words hyphenated at a line end."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Optional, Sequence

from vdgr_core.parsing.pdf_layout import Line

_PAGE_NUMBER = re.compile(r"^\s*(?:page\s*)?\d{1,5}(?:\s*(?:/|of)\s*\d{1,5})?\s*$", re.IGNORECASE)
_TOP_TOLERANCE = 2.0     # points between two lines' tops (or bottoms) on one page's edge
_RUNNING_PAGES = 3       # a top or bottom line recurring on this many pages is a running line
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*(?:\d+|[ivxlc]+)?\s*$", re.IGNORECASE)
_TOC_LINES = 5           # a page with this many dot-leader lines (and a fifth of its lines)...
_TOC_SHARE = 0.2         # ...is a table of contents or an index
_BROKEN = re.compile(r"([A-Za-z]+)[-\u00ad]$")
_WORD_START = re.compile(r"^([A-Za-z]+)")
_HYPHENATED = re.compile(r"\b([A-Za-z]+)-([a-z]+)\b")


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


def vocabulary(lines: Sequence[Line]) -> tuple[set[str], set[str]]:
    """(hyphenated words written inside a line, every word) of the document, casefolded."""
    hyphenated, words = set(), set()
    for ln in lines:
        low = ln.text.casefold()
        hyphenated.update(f"{a}-{b}" for a, b in _HYPHENATED.findall(low))
        words.update(re.findall(r"[a-z]+", low))
    return hyphenated, words
