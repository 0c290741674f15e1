"""Shared table-of-contents builder: flat (level, title, body) entries -> Sections.

Besides headings, a parser may emit **reference entries**: the units of a reference page (an
option, a parameter, a directive) that sit under one heading, in a definition list or a block
of their own. An entry is a heading one half level below the section that holds it
(:func:`entry_level`), titled with its term, so its term is a title in the path
(``... > Main options > message_size_limit``) and its text a section of its own. Entries never
nest in each other, any real heading closes them, and a :data:`RESUME` entry (title ``None``)
closes them too: its body is the text that follows them in the section that holds them.

Tiny entries go together: consecutive entries of one section whose bodies are each under
:data:`TINY_ENTRY_CHARS` non-space characters (``history  Same as fc -l.``, ``-i  If the -i
option is present, the shell is interactive.``) become one section titled with their terms
joined by ", " (as an entry's aliases are), up to :data:`GROUP_MAX_CHARS` in all: each term
stays a title in the path, and the group's text is a unit worth searching.
"""
from __future__ import annotations

import re
from typing import Callable, Iterable, Optional, Sequence

from schemas.records import ParsedDocument, Section

# (raw heading level, 0 for the preamble; title; body text) and, for paged formats, a fourth
# item: the body's pages as (non-whitespace offset, page) pairs (see ``Section.pages``)
Entry = tuple
Pages = tuple[tuple[int, int], ...]

#: the title of an entry that closes the open reference entries (its level is ignored)
RESUME = None
_ENTRY_OFFSET = 0.5
#: an entry whose body has fewer non-space characters than this goes with its tiny neighbours
TINY_ENTRY_CHARS = 100
#: a group of tiny entries holds at most this many non-space characters
GROUP_MAX_CHARS = 300


def entry_level(section_level: float) -> float:
    """The raw level of a reference entry inside a section of raw level ``section_level``
    (0 for the preamble): half a level below it, above any real subheading.

    Examples
    --------
    >>> entry_level(2), is_entry_level(entry_level(2)), is_entry_level(3)
    (2.5, True, False)
    """
    return int(section_level) + _ENTRY_OFFSET


def with_entry_sections(level: int, title: str, segments: Sequence, text_of: Callable[[list[str]], str]) -> list[tuple]:
    """One heading's ``(raw level, title, body)`` entries from its segments
    (:func:`vdgr_core.parsing.entries.split_entries`): each reference entry one half level down
    titled with its term, the text before the first entry under the heading, the text after an
    entry a :data:`RESUME`; ``text_of`` turns a segment's lines into body text.

    Examples
    --------
    >>> from vdgr_core.parsing.entries import Segment
    >>> with_entry_sections(2, "Options", [Segment("-a", ["-a", "  all"]), Segment(None, ["Done."])], "|".join)
    [(2, 'Options', ''), (2.5, '-a', '-a|  all'), (2, None, 'Done.')]
    """
    out: list[tuple] = [] if segments[0].term is None else [(level, title, "")]
    for n, seg in enumerate(segments):
        if seg.term is not None:
            out.append((entry_level(level), seg.term, text_of(seg.lines)))
        else:
            out.append((level, title if n == 0 else RESUME, text_of(seg.lines)))
    return out


def is_entry_level(level: float) -> bool:
    """True for the raw level of a reference entry (see :func:`entry_level`)."""
    return level != int(level)

_BLANK_RUN = re.compile(r"\n{3,}")


def nonspace_len(text: str) -> int:
    """Number of non-whitespace characters: the unit of page offsets (``Section.pages``).

    Examples
    --------
    >>> nonspace_len(" a b\\n\\nc ")
    3
    """
    return len("".join(text.split()))


def normalize_body(text: str) -> str:
    """Right-strip lines, collapse blank-line runs into one blank line, trim the ends.

    Examples
    --------
    >>> normalize_body("a  \\n\\n\\n\\nb\\n")
    'a\\n\\nb'
    """
    lines = [ln.rstrip() for ln in text.split("\n")]
    return _BLANK_RUN.sub("\n\n", "\n".join(lines)).strip("\n")


def _unpack(entry: Entry) -> tuple[int, str, str, Pages]:
    level, title, body = entry[:3]
    return level, title, body, tuple(entry[3]) if len(entry) > 3 else ()


def _title(title: Optional[str]) -> Optional[str]:
    return None if title is RESUME else " ".join(title.split())


def _join_bodies(*bodies: tuple[str, Pages]) -> tuple[str, Pages]:
    """Join (text, pages) bodies with a blank line, shifting each one's page offsets."""
    texts: list[str] = []
    pages: list[tuple[int, int]] = []
    offset = 0
    for text, body_pages in bodies:
        if not text.strip():
            continue
        texts.append(text)
        for start, page in body_pages:
            if pages and pages[-1][0] == start + offset:
                pages.pop()
            if not pages or pages[-1][1] != page:
                pages.append((start + offset, page))
        offset += nonspace_len(text)
    return "\n\n".join(texts), tuple(pages)


def build_sections(entries: Iterable[Entry]) -> tuple[Section, ...]:
    """Turn ordered heading entries into Sections with their heading paths.

    A heading closes every open heading of the same or a deeper raw level, so skipped
    levels (h1 then h3) nest under the nearest shallower heading. ``Section.level`` is the
    depth in the resulting tree (``len(heading_path)``). Entries of level <= 0 are
    preamble text and become a Section titled "" (only when they hold text). A heading
    with an empty title is not a section: its body joins the previous section. Reference
    entries (:func:`entry_level`) nest under the section that holds them; a real heading
    closes them first, and a :data:`RESUME` entry closes them and continues that section
    (a second Section with the same heading path).

    Parameters
    ----------
    entries:
        ``(level, title, body)`` or ``(level, title, body, pages)`` in document order.

    Returns
    -------
    tuple of Section
    """
    sections: list[Section] = []
    is_entry: list[bool] = []
    stack: list[tuple[int, str]] = []
    for entry in entries:
        level, title, body, pages = _unpack(entry)
        body, pages = _join_bodies((normalize_body(body), pages))
        title = _title(title)
        if title is RESUME:
            while stack and is_entry_level(stack[-1][0]):
                stack.pop()
            if body:
                path = tuple(t for _, t in stack)
                sections.append(Section(path[-1] if path else "", len(path), path, body, pages))
                is_entry.append(False)
            continue
        if level <= 0 or not title:
            if not body:
                continue
            if sections and (level > 0 or sections[-1].level == 0):
                prev = sections[-1]
                text, joined = _join_bodies((prev.text, prev.pages), (body, pages))
                sections[-1] = Section(prev.title, prev.level, prev.heading_path, text, joined)
            else:
                sections.append(Section("", 0, (), body, pages))
                is_entry.append(False)
            continue
        while stack and (stack[-1][0] >= level or (is_entry_level(stack[-1][0]) and not is_entry_level(level))):
            stack.pop()
        stack.append((level, title))
        path = tuple(t for _, t in stack)
        sections.append(Section(title, len(path), path, body, pages))
        is_entry.append(is_entry_level(level))
    return tuple(group_tiny_entries(sections, is_entry))


def group_tiny_entries(sections: Sequence[Section], is_entry: Sequence[bool]) -> list[Section]:
    """Sections with each run of consecutive tiny entries of one section merged into one.

    A run is entries (``is_entry``) with the same parent path, each with a body under
    :data:`TINY_ENTRY_CHARS` non-space characters; it is cut where the next entry would take
    the group past :data:`GROUP_MAX_CHARS`. A run of one entry stays as it is.

    Examples
    --------
    >>> s = lambda t, body: Section(t, 2, ("Builtins", t), body)
    >>> out = group_tiny_entries([s("fc", "fc  " + "x" * 200), s("history", "history  Same as fc -l."),
    ...                           s("integer", "integer  Same as typeset -i.")], [True] * 3)
    >>> [(x.title, x.heading_path) for x in out]
    [('fc', ('Builtins', 'fc')), ('history, integer', ('Builtins', 'history, integer'))]
    """
    out: list[Section] = []
    run: list[Section] = []
    size = 0        # non-space characters in the run

    def flush() -> None:
        nonlocal size
        size = 0
        if len(run) == 1:
            out.append(run[0])
        elif run:
            title = ", ".join(x.title for x in run)
            text, pages = _join_bodies(*((x.text, x.pages) for x in run))
            out.append(Section(title, run[0].level, run[0].heading_path[:-1] + (title,), text, pages))
        run.clear()

    for section, entry in zip(sections, is_entry):
        n = nonspace_len(section.text)
        if not (entry and n < TINY_ENTRY_CHARS):
            flush()
            out.append(section)
            continue
        if run and (run[0].heading_path[:-1] != section.heading_path[:-1] or size + n > GROUP_MAX_CHARS):
            flush()
        run.append(section)
        size += n
    flush()
    return out


def build_document(
    entries: Sequence[Entry],
    fallback_title: str,
    explicit_title: Optional[str] = None,
    metadata: tuple[tuple[str, object], ...] = (),
    can_title: Optional[Sequence[bool]] = None,
) -> ParsedDocument:
    """Pick the document title and build its sections.

    Title precedence: ``explicit_title`` (front matter, HTML ``<title>``) > first level-1
    heading > ``fallback_title``. When the first heading is the only level-1 heading it
    is the document title, not a section: its body joins the preamble and its
    subsections become the top of the table of contents.

    Parameters
    ----------
    entries:
        ``(raw level, title, body)`` or ``(raw level, title, body, pages)``; level 0 for
        text before the first heading.
    fallback_title:
        Title when nothing better exists (usually from the file name).
    explicit_title:
        A title declared by the document itself.
    metadata:
        Front matter as sorted ``(key, value)`` pairs.
    can_title:
        Per entry, whether that heading may serve as the document title (e.g. a
        numbered clause "1 Scope" may not); all may when None.

    Returns
    -------
    ParsedDocument
    """
    entries = [(lvl, _title(t), b, pages) for lvl, t, b, pages in map(_unpack, entries)]
    h1 = [i for i, e in enumerate(entries)
          if e[0] == 1 and e[1] and (can_title is None or can_title[i])]
    first_heading = next((i for i, e in enumerate(entries) if e[0] > 0 and e[1]), None)
    h1_title = entries[h1[0]][1] if h1 else ""
    if len(h1) == 1 and h1[0] == first_heading:
        i = h1[0]
        pre, pre_pages = _join_bodies(*((e[2], e[3]) for e in entries[: i + 1]))
        entries = [(0, "", pre, pre_pages)] + list(entries[i + 1:])
    title = (explicit_title or "").strip() or h1_title or fallback_title
    return ParsedDocument(title=" ".join(title.split()), sections=build_sections(entries),
                          metadata=tuple(metadata))
