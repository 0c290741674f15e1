"""reStructuredText parser: section adornments by plain regex, lenient and fast (no docutils)."""
from __future__ import annotations

import re

from schemas.records import ParsedDocument
from vdgr_core.parsing.toc import build_document

_ADORN = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+([\w:-]+)::\s*(.*)$")
_EXPLICIT = re.compile(r"^\s*\.\.(?:\s|$)")
_OPTION = re.compile(r"^\s+:[\w -]+:(?:\s.*)?$")
_BULLET = re.compile(r"^\s*[-*+\u2022]\s+")
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
    s = line.strip()
    if s == "::":
        return ""
    if s.endswith("::"):
        s = s[:-2].rstrip()
        s = s + ":" if s and not s.endswith(":") else s
    s = _BULLET.sub("", s)
    return strip_rst_inline(s)


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
    entries: list[list] = [[0, "", []]]
    skip_indented = False
    in_options = False
    prev_blank = True
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < n else ""
        if prev_blank and _is_adorn(line) and i + 2 < n and lines[i + 1].strip() \
                and not _is_adorn(lines[i + 1]) and _is_adorn(lines[i + 2]) \
                and lines[i + 2].strip()[0] == line.strip()[0]:
            style = (line.strip()[0], True)
            level = styles.setdefault(style, len(styles) + 1)
            entries.append([level, strip_rst_inline(lines[i + 1].strip()), []])
            i, prev_blank, skip_indented = i + 3, True, False
            continue
        if prev_blank and line.strip() and not line[0].isspace() and not _is_adorn(line) \
                and _is_adorn(nxt) and not nxt[0].isspace() and _underline_ok(line, nxt):
            style = (nxt.strip()[0], False)
            level = styles.setdefault(style, len(styles) + 1)
            entries.append([level, strip_rst_inline(line.strip()), []])
            i, prev_blank, skip_indented = i + 2, True, False
            continue
        i += 1
        body = entries[-1][2]
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
        if _is_adorn(line) and len(line.strip()) >= 4:
            body.append("")      # transition
            continue
        m = _DIRECTIVE.match(line)
        if m:
            name = m.group(1).lower()
            skip_indented = name in _SKIP_BLOCK
            in_options = True
            if name in _KEEP_ARGS and m.group(2).strip():
                body.append(strip_rst_inline(m.group(2).strip()))
            continue
        if _EXPLICIT.match(line):      # comment, target, footnote, substitution definition
            skip_indented = True
            continue
        body.append(_body_line(line))
    return build_document([(lvl, t, "\n".join(b)) for lvl, t, b in entries], fallback_title)
