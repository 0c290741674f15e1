"""Plain-text parser: ``#`` headings, whole-line bold titles and numbered clauses.

A short Title-Case line followed by a blank line is deliberately *not* a heading: that
guess mislabels too many ordinary lines (list items, captions, signatures).
"""
from __future__ import annotations

import re
from typing import Optional

from schemas.records import ParsedDocument
from vdgr_core.parsing.toc import build_document

_HASH = re.compile(r"^\s{0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_BOLD = re.compile(r"^\s*\*\*(?=\S)(.+?)(?<=\S)\*\*:?\s*$")
_NUMBERED = re.compile(r"^\s{0,3}((?:\d{1,3})(?:\.\d{1,3})*)\.?[ \t]+(\S.*?)\s*$")
_MAX_TITLE_CHARS = 100
_MAX_TITLE_WORDS = 14


def _numbered(line: str, prev_blank: bool) -> Optional[tuple[int, str]]:
    m = _NUMBERED.match(line)
    if not m:
        return None
    number, rest = m.group(1), m.group(2)
    depth = number.count(".") + 1
    if not rest[0].isupper() or rest[-1] in ".,;:!?" or len(rest) > _MAX_TITLE_CHARS \
            or len(rest.split()) > _MAX_TITLE_WORDS:
        return None
    if depth == 1 and not prev_blank:   # "1 Foo" inside a run of lines is a list item
        return None
    return depth, f"{number} {rest}"


def parse_text(text: str, fallback_title: str) -> ParsedDocument:
    """Parse plain text into a ParsedDocument.

    Headings are ``#``-prefixed lines (level = number of ``#``), numbered clauses such
    as ``5.3.5.4 Title`` (level = count of numbers; the title keeps its number) and
    lines entirely in bold ``**Title**`` (one level below the last ``#``/numbered
    heading, or level 1). Numbered clauses never become the document title.

    Parameters
    ----------
    text:
        Decoded document text.
    fallback_title:
        Title when the document has no single leading level-1 heading.

    Returns
    -------
    ParsedDocument
    """
    entries: list[list] = [[0, "", []]]
    can_title = [False]
    structural_level = 0
    prev_blank = True
    for line in text.split("\n"):
        if not line.strip():
            entries[-1][2].append("")
            prev_blank = True
            continue
        heading: Optional[tuple[int, str]] = None
        numbered = False
        m = _HASH.match(line)
        if m:
            heading = (len(m.group(1)), m.group(2))
            structural_level = heading[0]
        elif (n := _numbered(line, prev_blank)) is not None:
            heading, numbered = n, True
            structural_level = heading[0]
        elif (b := _BOLD.match(line)) and len(b.group(1)) <= _MAX_TITLE_CHARS:
            heading = (structural_level + 1, b.group(1).strip())
        prev_blank = False
        if heading:
            entries.append([heading[0], heading[1], []])
            can_title.append(not numbered)
        else:
            entries[-1][2].append(line.rstrip())
    return build_document([(lvl, t, "\n".join(b)) for lvl, t, b in entries], fallback_title,
                          can_title=can_title)
