"""Inline-markup stripping shared by the Markdown and text parsers."""
from __future__ import annotations

import html as _html
import re

_ESCAPABLE = "\\`*_{}[]()#+-.!~|<>"
_PROTECT = {c: chr(0xE000 + i) for i, c in enumerate(_ESCAPABLE)}
_RESTORE = {v: k for k, v in _PROTECT.items()}
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!~|<>])")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")

_SUBS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),                      # image -> alt
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),                       # [text](url)
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),                      # [text][ref]
    (re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>"), r"\1"),           # <http://...>
    (re.compile(r"<([^@<>\s]+@[^<>\s]+)>"), r"\1"),                      # <a@b.c>
    (re.compile(r"<!--.*?-->"), ""),                                     # comment
    (re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>"), ""),       # html tags
    (re.compile(r"(\*\*\*|___)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), r"\1"),
    (re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)"), r"\1"),
    (re.compile(r"\*(?=[^\s*])(.+?)(?<=[^\s*])\*"), r"\1"),
    (re.compile(r"(?<!\w)_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)"), r"\1"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),
)


_MARKUP_CHARS = re.compile(r"[\\`*_\[\]<~&!]")
_RESTORE_TABLE = str.maketrans(_RESTORE)


def _strip_segment(s: str) -> str:
    for pattern, repl in _SUBS:
        s = pattern.sub(repl, s)
    return _html.unescape(s)


def strip_markdown_inline(text: str) -> str:
    """Remove Markdown inline markup (emphasis, links, images, code spans, tags).

    Code spans keep their content verbatim; backslash escapes become the literal char.

    Examples
    --------
    >>> strip_markdown_inline("Use **bold** and [the docs](http://x) or `a_b_c`.")
    'Use bold and the docs or a_b_c.'
    """
    if not _MARKUP_CHARS.search(text):  # most lines of prose carry no markup at all
        return text
    text = _ESCAPE.sub(lambda m: _PROTECT[m.group(1)], text)
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_strip_segment(text[pos:m.start()]))
        out.append(m.group(2).strip() if m.group(2).strip() else m.group(2))
        pos = m.end()
    out.append(_strip_segment(text[pos:]))
    return "".join(out).translate(_RESTORE_TABLE)
