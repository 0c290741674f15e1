"""Plain-text parser: ``#`` headings, whole-line bold titles, numbered clauses, manual pages.

A short Title-Case line followed by a blank line is deliberately *not* a heading: that
guess mislabels too many ordinary lines (list items, captions, signatures).

A manual page rendered as text (``man ls > ls.txt``) is recognized by its section names: lines
in capitals at the left margin over indented text (``NAME``, ``SYNOPSIS``, ``OPTIONS``), two of
them at least. They are its headings, a short line indented less than the text under it is a
subsection (``   Shell Variables``), and the running header and footer (``LS(1) ... LS(1)``)
are dropped. In every text, a run of terms over indented descriptions (options, parameters:
:mod:`vdgr_core.parsing.entries`) becomes reference entries. A help file in Vim's tagged
format (``*usr_44.txt*``, ``:help help-writing``) is read by its tags instead
(:mod:`vdgr_core.parsing.helpfile`), as its HTML rendering is.
"""
from __future__ import annotations

import re
import textwrap
from typing import Optional

from schemas.records import ParsedDocument
from vdgr_core.parsing.entries import split_entries
from vdgr_core.parsing.helpfile import HelpPart, help_parts
from vdgr_core.parsing.toc import RESUME, build_document, entry_level, with_entry_sections

_HASH = re.compile(r"^\s{0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_BOLD = re.compile(r"^\s*\*\*(?=\S)(.+?)(?<=\S)\*\*:?\s*$")
_NUMBERED = re.compile(r"^\s{0,3}((?:\d{1,3})(?:\.\d{1,3})*)\.?[ \t]+(\S.*?)\s*$")
_MAX_TITLE_CHARS = 100
_MAX_TITLE_WORDS = 14
_MAN_SECTION = re.compile(r"^[A-Z][A-Z0-9 _/&(),'-]{0,38}[A-Z0-9)]$")
_MAN_SUBSECTION = re.compile(r"^ {1,4}[A-Z][\w'/&-]*(?: [\w'/&()-]+){0,5}$")
_MAN_RUNNING = re.compile(r"^\S+\(\d\w*\)\s{2,}.*\S\s*$|^.*\s{2,}\S+\(\d\w*\)\s*$")
#: names the rules text is made with (text-2: manual pages, reference entries; text-3: an
#: option over " : " and its description opens an entry; text-5: help files in Vim's tagged
#: format read by their tags); part of the
#: content rules recorded in the manifest (vdgr_core.safety.content_rules)
PARSER_VERSION = "text-5"


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


def _next_indent(lines: list[str], i: int) -> int:
    """Indentation of the first non-blank line after ``lines[i]`` (-1 when there is none)."""
    for line in lines[i + 1:]:
        if line.strip():
            return len(line) - len(line.lstrip())
    return -1


def _man_headings(lines: list[str]) -> dict[int, tuple[int, str]]:
    """Line number -> (level, title) of a manual page's section and subsection names; empty
    when the text is not a manual page."""
    sections = {i: (1, line.strip()) for i, line in enumerate(lines)
                if _MAN_SECTION.match(line) and _next_indent(lines, i) > 0}
    if len(sections) < 2:
        return {}
    subsections = {i: (2, line.strip()) for i, line in enumerate(lines)
                   if i not in sections and _MAN_SUBSECTION.match(line)
                   and _next_indent(lines, i) > len(line) - len(line.lstrip())}
    return {**sections, **subsections}


def _help_entries(parts: list[HelpPart]) -> list[tuple]:
    """A help file's ``(raw level, title, body)`` entries (:mod:`vdgr_core.parsing.helpfile`):
    its sections and headings at their depth, each tagged item an entry under the heading
    before it, lines as they are."""
    level, out = 0, []
    for part in parts:
        body = "\n".join(part.lines)
        if part.kind == "heading":
            level = part.depth
            out.append((level, part.title, body))
        elif part.kind == "entry":
            out.append((entry_level(level), part.title, body))
        else:
            out.append((level, RESUME if out else "", body))
    return out


def _with_entries(level: int, title: str, body: list[str], dedent: bool) -> list[tuple]:
    """One heading's (level, title, body) entry, its runs of reference entries split out; an
    entry's lines (and with ``dedent`` every body, as in a manual page) lose their common
    indentation."""
    segments = split_entries(body)
    if len(segments) == 1 and segments[0].term is None:
        text = "\n".join(body)
        return [(level, title, textwrap.dedent(text) if dedent else text)]
    return with_entry_sections(level, title, segments, lambda lines: textwrap.dedent("\n".join(lines)))


def parse_text(text: str, fallback_title: str) -> ParsedDocument:
    """Parse plain text into a ParsedDocument.

    Headings are ``#``-prefixed lines (level = number of ``#``), numbered clauses such
    as ``5.3.5.4 Title`` (level = count of numbers; the title keeps its number),
    lines entirely in bold ``**Title**`` (one level below the last ``#``/numbered
    heading, or level 1) and a manual page's section names (see the module docstring).
    Numbered clauses never become the document title. Runs of terms over indented
    descriptions become reference entries (:mod:`vdgr_core.parsing.entries`).

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
    lines = text.split("\n")
    if (help_file := help_parts(lines)) is not None:
        flat = _help_entries(help_file)     # titled by its file name, as its own header line does
        return build_document(flat, fallback_title, can_title=[False] * len(flat))
    entries: list[list] = [[0, "", []]]
    can_title = [False]
    structural_level = 0
    prev_blank = True
    man = _man_headings(lines)
    for i, line in enumerate(lines):
        if man and _MAN_RUNNING.match(line.strip()) and i not in man:
            continue
        if i in man:
            entries.append([man[i][0], man[i][1], []])
            can_title.append(False)
            prev_blank = False
            continue
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
    flat: list[tuple] = []
    titles: list[bool] = []
    for (lvl, t, b), may_title in zip(entries, can_title):
        parts = _with_entries(lvl, t, b, bool(man)) if lvl > 0 or t else [(lvl, t, "\n".join(b))]
        flat.extend(parts)
        titles.extend([may_title] + [False] * (len(parts) - 1))
    return build_document(flat, fallback_title, can_title=titles)
