"""Reference entries in plain text: a term line over its indented description.

Manual pages, README files and text renderings of reference pages list their options,
parameters and commands as a term on a line of its own (or followed by two spaces and the start
of its description) and the description indented below it::

       -a, --all
              do not ignore entries starting with .

       message_size_limit (default: 10240000)
              The maximal size in bytes of a message.

:func:`split_entries` finds such runs in a section's lines; a parser turns each entry into a
section of its own one half level down (:func:`vdgr_core.parsing.toc.entry_level`). A run needs
at least :data:`MIN_RUN` terms at the same indentation, so a code block under a line of prose
is not mistaken for one.
"""
from __future__ import annotations

import re
from typing import Collection, NamedTuple, Optional

MIN_RUN = 2
TERM_MAX_CHARS = 80
TERM_MAX_WORDS = 8
_OPTION = re.compile(r"^[-+]{1,2}[A-Za-z0-9?#@]")
_INLINE = re.compile(r"^([-+]{1,2}[A-Za-z0-9?#@]\S*(?:,? [-+]{1,2}[A-Za-z0-9]\S*)*(?: ?[=<\[]\S*)?)\s{2,}(\S.*)$")
# an option and its arguments, " : ", its description (``-f <cfgfile> : adds <cfgfile> ...``)
_COLON = re.compile(r"^((?:[-+]{1,2}[A-Za-z0-9?#@]\S*|--)(?:,? +(?!:(?:\s|$))\S+){0,3}) +: +(\S.*)$")
_CLOSING = re.compile(r"[.;:,!?]$")
# options_only: a flag that starts with a letter (not ``-1``, not a diff's ``+#if``), no code
# around it (a shell ``case`` label ``--prefix)``, a function ``+vi-hook(){``), and an inline
# description that reads as words (not a table row: ``--hard  D  D  D``)
_LETTER_OPTION = re.compile(r"^(?:(?:-{1,2}|\+)[A-Za-z]|--(?:\s|$))[^(){};]*$")
_WORD = re.compile(r"[A-Za-z]{3,}")


class Segment(NamedTuple):
    """A run of lines: ``term`` None for text outside any entry, else the entry's term."""

    term: Optional[str]
    lines: list[str]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _term(line: str, next_indent: Optional[int], options_only: bool = False) -> Optional[tuple[str, Optional[str]]]:
    """``(term, inline description or None)`` when ``line`` opens an entry, else None.

    A term stands alone over a more indented next line, is short and does not close like a
    sentence; an option flag (``-a``, ``--all``) may also carry the start of its description
    after two spaces or after `` : `` (``-c : only performs a check ...``). With
    ``options_only`` a term must be an option flag.
    """
    s = line.strip()
    if not s or len(s) > TERM_MAX_CHARS * 2:
        return None
    for pattern in (_INLINE, _COLON):
        m = pattern.match(s)
        if m and len(m.group(1)) <= TERM_MAX_CHARS:
            if options_only and not (_LETTER_OPTION.match(m.group(1)) and len(_WORD.findall(m.group(2))) >= 2):
                return None
            return m.group(1), m.group(2)
    if next_indent is None or next_indent <= _indent(line):
        return None
    if len(s) > TERM_MAX_CHARS or len(s.split()) > TERM_MAX_WORDS or _CLOSING.search(s):
        return None
    if options_only and not _LETTER_OPTION.match(s):
        return None
    if not (_OPTION.match(s) or (not options_only and (s[0].isalnum() or s[0] in "$<%@:."))):
        return None
    return s, None


def split_entries(lines: list[str], options_only: bool = False,
                  known_terms: Collection[int] = (), never_terms: Collection[int] = ()) -> list[Segment]:
    """Split a section's lines into text and reference entries (see the module docstring).

    An entry runs from its term line to the last line indented deeper than the term before a
    line at the term's indentation or less that opens no entry. Blank lines stay with the
    segment they fall in.

    Parameters
    ----------
    lines : list of str
        The section's body lines, indentation kept.
    options_only : bool
        Only option flags (``-a``, ``--all``, ``+x``) are terms: for preformatted blocks, where
        a configuration example's ``global`` over indented lines is no entry.
    known_terms : collection of int
        Indexes of lines that are terms by their layout (a PDF's term set in a column beside its
        description), whatever their text; each is a term line over its description.
    never_terms : collection of int
        Indexes of lines that their layout says are no terms (a PDF's plain line of words over
        an indented example); ``known_terms`` wins over it.

    Returns
    -------
    list of Segment
        In order; one text segment holding every line when no run of :data:`MIN_RUN` terms at
        one indentation is found.

    Examples
    --------
    >>> segs = split_entries(["Options:", "  -a, --all", "      show all", "  -q  be quiet", "", "Done."])
    >>> [(s.term, s.lines) for s in segs]
    [(None, ['Options:']), ('-a, --all', ['  -a, --all', '      show all']), ('-q', ['  -q  be quiet', '']), (None, ['Done.'])]
    >>> [s.term for s in split_entries(["  -C <dir> : changes to directory", "    <dir> first.", "  -c : only checks"])]
    ['-C <dir>', '-c']
    """
    nxt: list[Optional[int]] = [None] * len(lines)
    following = None
    for i in range(len(lines) - 1, -1, -1):
        nxt[i] = following
        if lines[i].strip():
            following = _indent(lines[i])
    terms = {i: t for i, line in enumerate(lines)
             if i not in never_terms and (t := _term(line, nxt[i], options_only)) is not None}
    terms.update((i, (lines[i].strip(), None)) for i in known_terms)
    by_indent: dict[int, int] = {}
    for i in terms:
        by_indent[_indent(lines[i])] = by_indent.get(_indent(lines[i]), 0) + 1
    levels = {ind for ind, n in by_indent.items() if n >= MIN_RUN}
    if not levels:
        return [Segment(None, list(lines))]
    level = min(levels)
    out: list[Segment] = [Segment(None, [])]
    for i, line in enumerate(lines):
        t = terms.get(i)
        if t is not None and _indent(line) == level:
            out.append(Segment(t[0], [line]))
            continue
        if out[-1].term is not None and line.strip() and _indent(line) <= level:
            out.append(Segment(None, []))
        out[-1].lines.append(line)
    return [s for s in out if s.term is not None or any(ln.strip() for ln in s.lines)]
