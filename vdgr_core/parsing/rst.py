"""reStructuredText parser: section adornments by plain regex, lenient and fast (no docutils).

Reference entries become sections of their own, one half level below their section, as in the
text parser (:mod:`vdgr_core.parsing.entries`): a definition list (a term over its indented
definition), an option list (``-a, --all  show all``) and Sphinx's object descriptions
(``.. option:: -v, --verbose``, ``.. function:: connect(path, timeout=5.0)``, ``.. envvar::``,
``.. confval::`` ...), whose argument is the entry's term. Lines of a literal block (after
``::`` or a ``code-block`` directive) are never terms.
"""
from __future__ import annotations

import re
from typing import Optional

from schemas.records import ParsedDocument
from vdgr_core.parsing.entries import split_entries
from vdgr_core.parsing.toc import build_document, with_entry_sections

#: names the rules reStructuredText is read with (rst-2: reference entries); part of the content
#: rules recorded in the manifest (vdgr_core.safety.content_rules)
PARSER_VERSION = "rst-2"

_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+([\w:-]+)::\s*(.*)$")
_EXPLICIT = re.compile(r"^\s*\.\.(?:\s|$)")
_OPTION = re.compile(r"^\s+:[\w -]+:(?:\s.*)?$")
_BULLET = re.compile(r"^\s*[-*+\u2022]\s+")
#: Sphinx directives that describe one object: their argument is a reference entry's term
_OBJECT = re.compile(r"^(?:[a-z]+:)?(?:option|cmdoption|envvar|confval|describe|object|function|method|"
                     r"classmethod|staticmethod|class|attribute|property|data|exception|decorator|"
                     r"decoratormethod|macro|member|type|var|enumerator|directive|role)$")
_LITERAL = frozenset({"code-block", "code", "sourcecode", "highlight", "parsed-literal", "doctest",
                      "testcode", "productionlist"})
_KEEP_ARGS = frozenset({
    "note", "warning", "tip", "important", "caution", "danger", "attention", "hint",
    "error", "admonition", "seealso", "topic", "sidebar", "rubric", "versionadded",
    "versionchanged", "deprecated",
})
_SKIP_BLOCK = frozenset({"toctree", "contents", "index", "meta", "raw", "include", "image",
                         "figure", "literalinclude", "only", "autosummary"})
_INLINE: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"(?::[\w:+-]+:)?`([^`<]+?)\s*<[^>`]*>`(?:_{1,2})?"), r"\1"),  # `text <url>`_ / :ref:
    (re.compile(r":[\w:+-]+:`([^`]+)`"), r"\1"),                             # :role:`text`
    (re.compile(r"``(.+?)``"), r"\1"),                                       # ``literal``
    (re.compile(r"`([^`]+)`_{1,2}"), r"\1"),                                 # `ref`_
    (re.compile(r"`([^`]+)`"), r"\1"),                                       # `interpreted`
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), r"\1"),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])"), r"\1"),
    (re.compile(r"\|([^|\s][^|]*?)\|(?:_{1,2})?"), r"\1"),                   # |substitution|
    (re.compile(r"\s*\[(?:#\w*|\*|\d+)\]_"), ""),                             # footnote refs
)


def strip_rst_inline(text: str) -> str:
    """Remove reStructuredText inline markup.

    Examples
    --------
    >>> strip_rst_inline("See :ref:`the guide <guide>` and ``cfg.yaml`` **now**.")
    'See the guide and cfg.yaml now.'
    """
    for pattern, repl in _INLINE:
        text = pattern.sub(repl, text)
    return text


def _is_adorn(line: str) -> bool:
    return bool(_ADORN.match(line)) and len(line.strip()) >= 2


def _underline_ok(title: str, adorn: str) -> bool:
    n = len(adorn.strip())
    return n >= len(title.strip()) or n >= 4


def _body_line(line: str) -> str:
    """A body line without markup, its indentation kept (a bullet's text indented where the text
    starts, so a wrapped item's next line is not read as the item's definition)."""
    s = line.strip()
    if s == "::":
        return ""
    if s.endswith("::"):
        s = s[:-2].rstrip()
        s = s + ":" if s and not s.endswith(":") else s
    indent = _indent(line)
    bullet = _BULLET.match(s)
    if bullet:
        indent += bullet.end()
        s = s[bullet.end():]
    return " " * indent + strip_rst_inline(s)


def _indent(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _with_entries(level: int, title: str, body: list[str], terms: set[int], literal: set[int]) -> list[tuple]:
    """One section's (level, title, body) tuples, its reference entries split out as sections of
    their own; every line loses its indentation, as body text always has."""
    def text(lines: list[str]) -> str:
        return "\n".join(ln.strip() for ln in lines)
    if not (level > 0 or title):        # the text before the first title: no entries
        return [(level, title, text(body))]
    segments = split_entries(body, known_terms=terms, never_terms=literal)
    if len(segments) == 1 and segments[0].term is None:
        return [(level, title, text(body))]
    return with_entry_sections(level, title, segments, text)


def _heading(lines: list[str], i: int) -> Optional[tuple[tuple[str, bool], str, int]]:
    """``(adornment style, title, lines used)`` when a section title starts at line ``i`` (after
    a blank line): an over- and underlined title, or a title over its underline."""
    line = lines[i]
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    if _is_adorn(line) and i + 2 < len(lines) and nxt.strip() and not _is_adorn(nxt) \
            and _is_adorn(lines[i + 2]) and lines[i + 2].strip()[0] == line.strip()[0]:
        return (line.strip()[0], True), strip_rst_inline(nxt.strip()), 3
    if line.strip() and not line[0].isspace() and not _is_adorn(line) \
            and _is_adorn(nxt) and not nxt[0].isspace() and _underline_ok(line, nxt):
        return (nxt.strip()[0], False), strip_rst_inline(line.strip()), 2
    return None


def parse_rst(text: str, fallback_title: str) -> ParsedDocument:
    """Parse reStructuredText into a ParsedDocument.

    Section titles are lines with an underline, or an over- and underline, of one
    repeated punctuation character; levels follow the order in which adornment styles
    first appear. Comments, targets and non-text directives are dropped; admonition
    text and code blocks are kept as body text.

    Parameters
    ----------
    text:
        Decoded document text.
    fallback_title:
        Title when the document has no single leading top-level section.

    Returns
    -------
    ParsedDocument
    """
    lines = text.split("\n")
    styles: dict[tuple[str, bool], int] = {}
    # [level, title, body lines, indexes of term lines, indexes of literal lines]
    entries: list[list] = [[0, "", [], set(), set()]]
    skip_indented = False
    in_options = False
    prev_blank = True
    literal_above = None        # indentation a literal block's lines are deeper than
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        heading = _heading(lines, i) if prev_blank else None
        if heading is not None:
            style, title, used = heading
            entries.append([styles.setdefault(style, len(styles) + 1), title, [], set(), set()])
            i, prev_blank, skip_indented, literal_above = i + used, True, False, None
            continue
        i += 1
        _, _, body, terms, literal = entries[-1]
        if not line.strip():
            body.append("")
            prev_blank, in_options = True, False
            continue
        prev_blank = False
        if in_options and _OPTION.match(line):
            continue
        in_options = False
        if skip_indented and line[0].isspace():
            continue
        skip_indented = False
        if literal_above is not None:
            if _indent(line) > literal_above:
                literal.add(len(body))
                body.append(_body_line(line))
                continue
            literal_above = None
        if _is_adorn(line) and len(line.strip()) >= 4:
            body.append("")      # transition
            continue
        m = _DIRECTIVE.match(line)
        if m:
            name = m.group(1).lower()
            skip_indented = name in _SKIP_BLOCK
            in_options = True
            arg = strip_rst_inline(m.group(2).strip())
            if _OBJECT.match(name) and arg:
                terms.add(len(body))
                body.append(" " * _indent(line) + arg)
            elif name in _KEEP_ARGS and arg:
                body.append(" " * _indent(line) + arg)
            if name in _LITERAL:
                literal_above = _indent(line)
            continue
        if _EXPLICIT.match(line):      # comment, target, footnote, substitution definition
            skip_indented = True
            continue
        body.append(_body_line(line))
        if line.rstrip().endswith("::"):
            literal_above = _indent(line)
    return build_document([part for e in entries for part in _with_entries(*e)], fallback_title)
