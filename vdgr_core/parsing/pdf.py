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

Reference entries: under each heading, a run of definition terms (a variable, an option, a
builtin's synopsis over its indented description, or a term set beside it) becomes one section
per entry, half a level down and titled with its term (:func:`entry_runs`), as the text and
HTML parsers do: ``SHELL BUILTIN COMMANDS > ulimit [-HS] -a``, ``Shell Variables > TMOUT``.

``PARSER_VERSION`` names these rules; it is part of the content rules recorded in the manifest
(``vdgr_core.safety.content_rules``), so a change re-parses every document on the next update.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.entries import TERM_MAX_CHARS, split_entries
from vdgr_core.parsing.pdf_clean import (drop_running_lines, drop_toc_pages, join_broken_word,
                                         vocabulary)
from vdgr_core.parsing.pdf_headings import document_title, font_headings, outline_headings
from vdgr_core.parsing.pdf_layout import Bookmark, Line, clean_text, pair_terms, read_pdf
from vdgr_core.parsing.toc import RESUME, build_document, entry_level, nonspace_len

_CAPITALS_BROKEN = re.compile(r"\b[A-Z]{2,}-$")
# a line of two or more plain words: a lead-in to an example, not a term, unless set in bold
_PROSE = re.compile(r"[A-Z]?[a-z]+(?: [a-z]+)+")
# a bullet or a list number beside an item is no term: the item is text of its section
_LIST_MARK = re.compile(r"[\u2022\u25e6\u25aa\u2023\u00b7\u2013\u2014o]|\(?(?:\d{1,2}|[a-z])[.)]")
_PLAIN_WORD = re.compile(r"(?<!\S)[A-Za-z][a-z]*[.,;:]?(?!\S)")

__all__ = ["PARSER_VERSION", "Bookmark", "Line", "clean_text", "drop_running_lines", "drop_toc_pages",
           "font_headings", "join_broken_word", "outline_headings", "pair_terms", "parse_pdf"]

# the rules below (extraction, cleaning, pairing, headings); part of the content rules in the manifest
PARSER_VERSION = "pdf-7"
# indentation is compared in steps of this many points, so a bold term half a point to the left
# of its plain neighbours is at their indentation
_INDENT_STEP_PT = 2.0


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


Run = tuple[Optional[str], list[Line]]      # (term, or None for text; its lines)


def entry_runs(lines: Sequence[Line]) -> list[Run]:
    """A heading's lines split into text and definition entries, ``(term or None, lines)`` in order.

    The lines are laid out as indented text (indentation from their left edges) and split by
    :func:`vdgr_core.parsing.entries.split_entries`, the rules of a manual page in plain text: a
    run of at least two terms at one indentation, each a short line over a deeper description.
    A term set beside its description (:func:`pair_terms`) is a term whatever its text (``!``,
    ``$``; not a bullet or a list number), on a line of its own over the rest of its line; a
    plain (not bold) line of words ("On the other hand", "will produce") over an indented
    example is none. Then: an entry whose description is not words is text again
    (:func:`_described`), text runs are joined, an entry does not end inside a paragraph
    (:func:`_whole_paragraphs`) and more forms of one term join its entry
    (:func:`_merge_synopses`).

    Examples
    --------
    >>> ln = lambda x0, text, term="": Line(1, 0, 0.0, text, 10.0, False, True, x0, term=term)
    >>> runs = entry_runs([ln(108, "The variables:"), ln(108, "BASHPID"), ln(144, "Expands to the PID."),
    ...                    ln(108, "PWD The current directory.", term="PWD"), ln(144, "Set by cd.")])
    >>> [(term, [x.text for x in group]) for term, group in runs]
    [(None, ['The variables:']), ('BASHPID', ['BASHPID', 'Expands to the PID.']), ('PWD', ['PWD The current directory.', 'Set by cd.'])]
    """
    if len(lines) < 2:
        return [(None, list(lines))]
    base = min(ln.x0 for ln in lines)
    text: list[str] = []
    owner: list[int] = []
    paired: list[int] = []
    prose: list[int] = []
    for k, ln in enumerate(lines):
        pad = " " * round((ln.x0 - base) / _INDENT_STEP_PT)
        if (ln.term and ln.text.startswith(ln.term) and ln.text[len(ln.term):].strip()
                and not _LIST_MARK.fullmatch(ln.term)):
            paired.append(len(text))
            text += [pad + ln.term, pad + "  " + ln.text[len(ln.term):].strip()]
            owner += [k, k]
        else:
            if not ln.bold and _PROSE.fullmatch(ln.text.strip()):
                prose.append(len(text))
            text.append(pad + ln.text)
            owner.append(k)
    runs: list[Run] = []
    at = 0
    for seg in split_entries(text, known_terms=paired, never_terms=prose):
        n = len(seg.lines)
        group = sorted({owner[i] for i in range(at, at + n)} - {owner[at - 1] if at else -1})
        at += n
        runs.append((seg.term, [lines[k] for k in group]))
    runs = [(term if term is None or _described(term, group) else None, group) for term, group in runs if group]
    return _merge_synopses(_whole_paragraphs(_joined_text(runs)))


def _described(term: str, group: list[Line]) -> bool:
    """Whether an entry's description reads as words: at least two plain words, not a comment
    (``set jitter  # jitter points ...``) or code (``{swarm|square|vertical}``) beside an
    example."""
    text = " ".join(ln.text for ln in group)
    rest = text[len(term):] if text.startswith(term) else text
    return not rest.lstrip().startswith(("#", "//")) and len(_PLAIN_WORD.findall(rest)) >= 2


def _joined_text(runs: list[Run]) -> list[Run]:
    """Text runs next to each other (an entry made text again between them) as one run."""
    out: list[Run] = []
    for term, group in runs:
        if term is None and out and out[-1][0] is None:
            out[-1] = (None, out[-1][1] + group)
        else:
            out.append((term, group))
    return out


def _whole_paragraphs(runs: list[Run]) -> list[Run]:
    """An entry does not end inside a paragraph: its last lines move to the text after it when
    they are in that text's box (page and box) or set to the left of the entry's description
    (a paragraph whose first line is indented, as TeX sets it, is not the description of the
    entry above it)."""
    out: list[Run] = []
    for term, group in runs:
        if term is None and out and out[-1][0] is not None:
            prev = out[-1][1]
            where = (group[0].page, group[0].box)
            margin = prev[1].x0 - _INDENT_STEP_PT if len(prev) > 1 else 0.0
            cut = len(prev)
            while cut > 1 and ((prev[cut - 1].page, prev[cut - 1].box) == where or prev[cut - 1].x0 < margin):
                cut -= 1
            out[-1] = (out[-1][0], prev[:cut])
            group = prev[cut:] + group
        out.append((term, group))
    return out


def _merge_synopses(runs: list[Run]) -> list[Run]:
    """Text between two entries that is only more forms of the next entry's term (``declare
    [-aA...]`` over ``typeset [-aA...]`` and its description) joins that entry, titled with its
    first form."""
    out: list[Run] = []
    for term, group in runs:
        if (term is not None and len(out) > 1 and out[-1][0] is None and out[-2][0] is not None
                and all(_synopsis(ln, group[0].x0) for ln in out[-1][1])):
            head = out.pop()[1]
            out.append((head[0].text, head + group))
        else:
            out.append((term, group))
    return out


def _synopsis(line: Line, x0: float) -> bool:
    """Whether ``line`` reads as one more form of a term at ``x0`` (``ulimit [-HS] -a`` over
    ``ulimit [-HS] [-bcd...]``): at its indentation, short, not closed like a sentence."""
    text = line.text.rstrip()
    return (abs(line.x0 - x0) <= _INDENT_STEP_PT and len(text) <= TERM_MAX_CHARS
            and (text.endswith("...") or not text.endswith((".", ",", ";", ":", "!", "?"))))


def _with_entries(level: int, title: str, lines: Sequence[Line],
                  words: tuple[set[str], set[str]]) -> list[tuple[float, str, str, tuple]]:
    """One heading's section, its runs of definition entries (:func:`entry_runs`) split out as
    sections of their own half a level down, titled with their terms."""
    out = []
    runs = entry_runs(lines)
    if runs[0][0] is not None:
        runs.insert(0, (None, []))
    for n, (term, group) in enumerate(runs):
        body = _Body(words)
        for ln in group:
            body.add(ln)
        lvl, name = (entry_level(level), term) if term is not None else (level, title if n == 0 else RESUME)
        out.append((lvl, name, body.text(), tuple(body.pages)))
    return out


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
    headed: list[tuple[int, str, list[Line]]] = [(0, "", [])]
    skip = 0
    for i in range(len(lines) + 1):
        for level, span, title in starts.get(i, ()):
            headed.append((level, title, []))
            skip = max(skip, span)
        if i == len(lines):
            break
        if skip:
            skip -= 1
            continue
        headed[-1][2].append(lines[i])
    first_heading = min(starts, default=len(lines))
    n_top = sum(1 for lvl, _, _ in headed if lvl == 1)
    entries = [e for level, title, group in headed for e in _with_entries(level, title, group, words)]
    return build_document(entries, fallback_title,
                          explicit_title=document_title(pdf.declared_title, lines, first_heading),
                          can_title=[n_top == 1] * len(entries))
