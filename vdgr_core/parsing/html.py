"""HTML parser (BeautifulSoup with the stdlib "html.parser"): h1-h6 form the sections.

List items and table rows keep the line shape the Markdown parser gives its text: each ``<li>`` is
a line of its own marked ``-`` (``<ul>``) or ``1.``, ``2.`` ... (``<ol>``), a nested list indented
two spaces a level; each table row is a line with its cells separated by `` | ``
(:func:`vdgr_core.parsing.markdown.raw_html_to_text` and Markdown pipe tables give the same).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.toc import build_document

_DROP = frozenset({"script", "style", "nav", "head", "title", "noscript", "template"})
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_PARA = frozenset({
    "p", "pre", "blockquote", "table", "ul", "ol", "dl", "div", "section", "article",
    "header", "footer", "main", "aside", "figure", "form", "hr", "address", "details",
    "fieldset", "body",
})
_LINE = frozenset({"li", "tr", "dt", "dd", "caption", "figcaption", "summary", "legend"})
_CELL = frozenset({"td", "th"})
_SKIP_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)
_WS = re.compile(r"\s+")
# Page furniture, not content: landmark roles of navigation and site chrome, and the classes the
# common documentation generators (Sphinx, DocBook, MkDocs) give their sidebars, navigation bars
# and permalink anchors.
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary"})
_DROP_CLASSES = frozenset({"headerlink", "sphinxsidebar", "related", "navheader", "navfooter",
                           "breadcrumbs", "breadcrumb", "toc-backref", "md-sidebar", "skip-link"})
_PERMALINK = re.compile(r"\s*[¶§#🔗]+\s*$")
_HTML_OPEN = re.compile(r"<html[\s>]", re.I)
_HTML_CLOSE = re.compile(r"</html\s*>", re.I)
_LISTS = frozenset({"ul", "ol", "menu"})
_ROW = "tr"
_INDENT = "  "           # one nesting level of a list
_CELL_SEP = " | "

#: names the rules HTML text is made with (html-2: list items marked and indented, table cells
#: separated by " | "); part of the content rules recorded in the manifest
#: (vdgr_core.safety.content_rules), so a change re-parses every HTML document on the next update
PARSER_VERSION = "html-2"


class _Text(NamedTuple):
    """A piece of text and the indentation a line it starts takes (inside a list item)."""

    text: str
    indent: str


class _Item(NamedTuple):
    """The start of a list item: a new line with ``indent`` and ``label`` (``-`` or ``3.``)."""

    indent: str
    label: str


def _ol_start(tag: Tag) -> int:
    try:
        return int(str(tag.attrs.get("start", "1")).strip())
    except ValueError:
        return 1


class _Collector:
    """Accumulates (level, title, body parts) entries while walking the tree in order.

    Body parts are :class:`_Text`, :class:`_Item` and ``int`` breaks (1 line, 2 paragraph).
    """

    def __init__(self) -> None:
        self.entries: list[list] = [[0, "", []]]
        self.lists: list[list] = []      # open lists, innermost last: [ordered, next number]
        self.cells = 0                   # open table cells: breaks inside one are spaces
        self.row_cells: list[int] = []   # cells seen so far in each open table row

    def _indent(self) -> str:
        return _INDENT * len(self.lists)

    def text(self, s: str) -> None:
        self.entries[-1][2].append(_Text(s, self._indent()))

    def brk(self, n: int) -> None:
        if self.cells:
            self.text(" ")
        else:
            self.entries[-1][2].append(n)

    def heading(self, level: int, title: str) -> None:
        self.entries.append([level, title, []])

    def _list(self, tag: Tag, ordered: bool, in_pre: bool) -> None:
        self.brk(1 if self.lists else 2)
        self.lists.append([ordered, _ol_start(tag) if ordered else 0])
        try:
            self.walk(tag, in_pre)
        finally:
            self.lists.pop()
        self.brk(1 if self.lists else 2)

    def _item(self, tag: Tag, in_pre: bool) -> None:
        if not self.lists or self.cells:
            self.brk(1)
            self.walk(tag, in_pre)
            self.brk(1)
            return
        current = self.lists[-1]
        if current[0]:
            value = tag.attrs.get("value")
            if value is not None and str(value).strip().lstrip("-").isdigit():
                current[1] = int(str(value).strip())
            label = f"{current[1]}."
            current[1] += 1
        else:
            label = "-"
        self.entries[-1][2].append(_Item(_INDENT * (len(self.lists) - 1), label))
        self.walk(tag, in_pre)
        self.brk(1)

    def _row(self, tag: Tag, in_pre: bool) -> None:
        self.brk(1)
        self.row_cells.append(0)
        try:
            self.walk(tag, in_pre)
        finally:
            self.row_cells.pop()
        self.brk(1)

    def _cell(self, tag: Tag, in_pre: bool) -> None:
        if self.row_cells and not self.cells:
            if self.row_cells[-1]:
                self.text(_CELL_SEP)
            self.row_cells[-1] += 1
        self.cells += 1
        try:
            self.walk(tag, in_pre)
        finally:
            self.cells -= 1
        self.text(" ")

    def walk(self, node: Tag, in_pre: bool = False) -> None:
        for child in node.children:
            if isinstance(child, NavigableString):
                if isinstance(child, _SKIP_STRINGS):
                    continue
                s = str(child)
                self.text(s if in_pre else _WS.sub(" ", s))
                continue
            if not isinstance(child, Tag):
                continue
            name = (child.name or "").lower()
            if name in _DROP or _is_furniture(child):
                continue
            if name in _HEADINGS:
                title = _WS.sub(" ", _heading_text(child)).strip()
                self.heading(_HEADINGS[name], _PERMALINK.sub("", title))
            elif name == "br":
                self.brk(1)
            elif name in _LISTS and not self.cells:
                self._list(child, name == "ol", in_pre)
            elif name == "li":
                self._item(child, in_pre)
            elif name == _ROW and not self.cells:
                self._row(child, in_pre)
            elif name in _CELL:
                self._cell(child, in_pre)
            elif name in _PARA:
                self.brk(2)
                self.walk(child, in_pre or name == "pre")
                self.brk(2)
            elif name in _LINE:
                self.brk(1)
                self.walk(child, in_pre)
                self.brk(1)
            else:
                self.walk(child, in_pre)


def _is_furniture(tag: Tag) -> bool:
    attrs = tag.attrs or {}
    if str(attrs.get("role", "")).lower() in _DROP_ROLES:
        return True
    classes = attrs.get("class") or ()
    return any(c.lower() in _DROP_CLASSES for c in classes)


def _heading_text(tag: Tag) -> str:
    return " ".join(str(t) for t in tag.find_all(string=True)
                    if not any(_is_furniture(p) for p in t.parents if p is not tag and isinstance(p, Tag)))


def _content_root(soup: BeautifulSoup):
    """The page's main content when it is marked (``<main>`` or ``role="main"``), else the page."""
    main = soup.find("main") or soup.find(attrs={"role": "main"})
    return main if main is not None else soup


def _body(parts: list) -> str:
    """Join body parts into text.

    Adjacent breaks merge into the strongest one (1 line, 2 paragraph); a list item starts a
    line with its indentation and label, and the breaks between the label and the item's first
    text are dropped (``<li><p>text</p></li>`` reads ``- text``); a line a text starts takes that
    text's indentation (an item's second paragraph stays under the item). Whitespace inside a
    line collapses to single spaces.
    """
    lines: list[tuple[str, list[str]]] = []     # (indentation, pieces)
    pending = 0
    item_open = False                           # an item's label waits for its first text

    def start(indent: str, breaks: int) -> None:
        lines.extend(("", []) for _ in range(breaks - 1))
        lines.append((indent, []))

    for part in parts:
        if isinstance(part, int):
            if not item_open:
                pending = max(pending, part)
            continue
        if isinstance(part, _Item):
            start(part.indent, max(pending, 1) if lines else 1)
            lines[-1][1].append(part.label + " ")
            pending, item_open = 0, True
            continue
        if not part.text.strip():
            if lines and not pending:
                lines[-1][1].append(" ")
            continue
        if not lines:
            start(part.indent, 1)
        elif pending:
            start(part.indent, pending)
        pending, item_open = 0, False
        for i, segment in enumerate(part.text.split("\n")):
            if i:
                start(part.indent, 1)
            lines[-1][1].append(segment)
    out = []
    for indent, pieces in lines:
        line = " ".join("".join(pieces).split())
        out.append(indent + line if line else "")
    return "\n".join(out)


def parse_html(text: str, fallback_title: str) -> ParsedDocument:
    """Parse HTML into a ParsedDocument.

    Parameters
    ----------
    text:
        Decoded HTML.
    fallback_title:
        Title when there is no ``<title>`` and no single first ``<h1>``.

    Returns
    -------
    ParsedDocument
        Title from the page's single ``<h1>``, else ``<title>``; sections from h1-h6 inside
        ``<main>``/``role="main"`` when the page marks it; script, style, navigation landmarks,
        documentation-generator sidebars and permalink anchors dropped; tags reduced to text;
        list items as lines marked ``-`` or ``1.`` (nested lists indented two spaces a level),
        table rows as lines with cells separated by `` | ``.

    Raises
    ------
    DocumentError
        TRUNCATED when the document opens ``<html>`` and never closes it.
    """
    if _HTML_OPEN.search(text) and not _HTML_CLOSE.search(text):
        raise DocumentError(DeadLetterReason.TRUNCATED, "<html> is never closed")
    soup = BeautifulSoup(text, "html.parser")
    title_tag = soup.find("title")
    explicit = _WS.sub(" ", title_tag.get_text(" ")).strip() if title_tag else ""
    collector = _Collector()
    collector.walk(_content_root(soup))
    entries = [(lvl, t, _body(b)) for lvl, t, b in collector.entries]
    if sum(1 for lvl, _, _ in entries if lvl == 1) == 1:
        explicit = ""   # the page's own h1 names it; <title> often adds a site suffix
    return build_document(entries, fallback_title, explicit_title=explicit or None)
