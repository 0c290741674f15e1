"""The HTML tree as a browser builds it from end tags a page leaves out.

HTML lets a page leave out the end tags of ``p``, ``li``, ``dt``, ``dd``, ``tr``, ``td``, ``th``
and ``option``: a new ``<p>`` (or a ``<div>``, a ``<ul>``, a heading ...) ends an open paragraph, a
new ``<li>`` the open item of its list. BeautifulSoup's ``html.parser`` tree builder does not
know these rules and nests each such element inside the one before it: a page of unclosed
paragraphs (SQLite's manual) becomes one paragraph holding the rest of the page, a list of
unclosed items an item nested as deep as the list is long, deep enough to pass Python's
recursion limit on a page of 10,000 items. :func:`html_soup` closes them as the HTML standard's
tree construction does ("in body" insertion mode; the scope rules kept to the elements above), and
keeps everything else of ``html.parser`` (whitespace, unknown elements, comments) as it is.
"""
from __future__ import annotations

from typing import Optional

from bs4 import BeautifulSoup, Tag

# start tags that close an open <p> (HTML standard, "in body": "If the stack of open elements has
# a p element in button scope, then close a p element")
_CLOSES_P = frozenset({
    "address", "article", "aside", "blockquote", "center", "details", "dialog", "dir", "div", "dl",
    "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hgroup", "hr", "li", "dd", "dt", "listing", "main", "menu", "nav", "ol", "p", "pre", "search",
    "section", "summary", "table", "ul", "xmp", "plaintext",
})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# the boundaries of "button scope": a <p> outside one of these is not closed from inside it
_BUTTON_SCOPE = frozenset({"applet", "caption", "html", "table", "td", "th", "marquee", "object",
                           "template", "button"})
# the standard's "special" elements: an open list item is not looked for past one of these
# (except address, div and p), so an item of an outer list stays open in a nested one
_SPECIAL = frozenset({
    "address", "applet", "area", "article", "aside", "base", "basefont", "bgsound", "blockquote",
    "body", "br", "button", "caption", "center", "col", "colgroup", "dd", "details", "dir", "div",
    "dl", "dt", "embed", "fieldset", "figcaption", "figure", "footer", "form", "frame", "frameset",
    "h1", "h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html", "iframe", "img",
    "input", "keygen", "li", "link", "listing", "main", "marquee", "menu", "meta", "nav", "noembed",
    "noframes", "noscript", "object", "ol", "p", "param", "plaintext", "pre", "script", "search",
    "section", "select", "source", "style", "summary", "table", "tbody", "td", "template",
    "textarea", "tfoot", "th", "thead", "title", "tr", "track", "ul", "wbr", "xmp",
})
_ITEM_STOP = _SPECIAL - {"address", "div", "p"}
# a new row or cell closes the open cells (and rows) of its own table only
_ROW_PARTS = {"tr": (frozenset({"tr", "td", "th"}), frozenset({"table", "tbody", "thead", "tfoot", "html"})),
              "td": (frozenset({"td", "th"}), frozenset({"tr", "table", "html"})),
              "th": (frozenset({"td", "th"}), frozenset({"tr", "table", "html"}))}
_ITEMS = {"li": frozenset({"li"}), "dt": frozenset({"dt", "dd"}), "dd": frozenset({"dt", "dd"})}


class _Soup(BeautifulSoup):
    """BeautifulSoup whose start tags first close the elements they end in HTML."""

    def handle_starttag(self, name, namespace, nsprefix, attrs, *args, **kwargs):
        name_l = (name or "").lower()
        target = _implied_end(self.tagStack, name_l)
        if target is not None:
            self._pop_through(target)
        if name_l in _CLOSES_P and (p := _open_in_scope(self.tagStack, "p")) is not None:
            self._pop_through(p)
        if name_l in _HEADINGS and self.currentTag is not None and self.currentTag.name in _HEADINGS:
            self.endData()
            self.popTag()           # a heading does not hold another
        return super().handle_starttag(name, namespace, nsprefix, attrs, *args, **kwargs)

    def _pop_through(self, target: Tag) -> None:
        """Close the open elements down to ``target``, ``target`` included."""
        self.endData()
        while self.tagStack:
            top = self.tagStack[-1]
            self.popTag()
            if top is target:
                return


def _implied_end(stack: list, name: str) -> Optional[Tag]:
    """The outermost open element a start tag ``name`` ends (an open item of the same list, an
    open cell or row of the same table), or None."""
    if name in _ITEMS:
        for tag in reversed(stack):
            if tag.name in _ITEMS[name]:
                return tag
            if tag.name in _ITEM_STOP:
                return None
        return None
    if name in _ROW_PARTS:
        closes, stops = _ROW_PARTS[name]
        found = None
        for tag in reversed(stack):
            if tag.name in stops:
                break
            if tag.name in closes:
                found = tag
        return found
    return None


def _open_in_scope(stack: list, name: str) -> Optional[Tag]:
    """The innermost open ``name`` element in button scope, or None."""
    for tag in reversed(stack):
        if tag.name == name:
            return tag
        if tag.name in _BUTTON_SCOPE:
            return None
    return None


def html_soup(text: str) -> BeautifulSoup:
    """``text`` parsed by ``html.parser`` with the HTML standard's implied end tags.

    Examples
    --------
    >>> str(html_soup("<ul><li>a<li>b</ul><p>x<p>y<div>z</div>"))
    '<ul><li>a</li><li>b</li></ul><p>x</p><p>y</p><div>z</div>'
    >>> str(html_soup("<ul><li>a<ul><li>b</ul><li>c</ul>"))
    '<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>'
    >>> str(html_soup("<table><tr><td>1<td>2<tr><td>3</table>"))
    '<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>'
    """
    return _Soup(text, "html.parser")
