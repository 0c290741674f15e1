"""HTML parser (BeautifulSoup with the stdlib "html.parser"): h1-h6 form the sections."""
from __future__ import annotations

import re

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


class _Collector:
    """Accumulates (level, title, body) entries while walking the tree in order."""

    def __init__(self) -> None:
        self.entries: list[list] = [[0, "", []]]

    def text(self, s: str) -> None:
        self.entries[-1][2].append(s)

    def brk(self, n: int) -> None:
        self.entries[-1][2].append(n)

    def heading(self, level: int, title: str) -> None:
        self.entries.append([level, title, []])

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
            elif name in _PARA:
                self.brk(2)
                self.walk(child, in_pre or name == "pre")
                self.brk(2)
            elif name in _LINE:
                self.brk(1)
                self.walk(child, in_pre)
                self.brk(1)
            elif name in _CELL:
                self.walk(child, in_pre)
                self.text(" ")
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
    """Join text parts; adjacent breaks merge into the strongest one (1 line, 2 paragraph)."""
    out: list[str] = []
    pending = 0
    for part in parts:
        if isinstance(part, int):
            pending = max(pending, part)
            continue
        if not part.strip():
            out.append(" " if not pending else "")
            continue
        if pending and out:
            out.append("\n" * pending)
        pending = 0
        out.append(part)
    lines = [" ".join(ln.split()) for ln in "".join(out).split("\n")]
    return "\n".join(lines)


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
        documentation-generator sidebars and permalink anchors dropped; tags reduced to text,
        list items and table rows as lines.

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
