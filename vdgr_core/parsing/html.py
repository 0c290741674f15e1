"""HTML parser (BeautifulSoup with the stdlib "html.parser", end tags a page leaves out implied as
the HTML standard says: :mod:`vdgr_core.parsing.html_tree`): h1-h6 form the sections.

List items and table rows keep the line shape the Markdown parser gives its text: each ``<li>`` is
a line of its own marked ``-`` (``<ul>``) or ``1.``, ``2.`` ... (``<ol>``), a nested list indented
two spaces a level; each table row is a line with its cells separated by `` | ``
(:func:`vdgr_core.parsing.markdown.raw_html_to_text` and Markdown pipe tables give the same).
"""
from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import NamedTuple, Optional

from bs4 import BeautifulSoup, NavigableString, Tag
from bs4.element import Comment, Declaration, Doctype, ProcessingInstruction

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.entries import Segment, split_entries
from vdgr_core.parsing.helpfile import HelpPart, help_parts
from vdgr_core.parsing.html_tree import html_soup
from vdgr_core.parsing.toc import RESUME, build_document, entry_level

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
                           "breadcrumbs", "breadcrumb", "toc-backref", "md-sidebar", "skip-link",
                           "nav", "navbar"})
# boxes set apart from the text (DocBook's <div class="note"><h3 class="title">Note</h3>): their
# heading is the box's label, not a section the text after the box belongs to
_ADMONITIONS = frozenset({"note", "tip", "hint", "warning", "caution", "important", "attention",
                          "danger", "admonition", "notice", "sidebar"})
_PERMALINK = re.compile(r"\s*[¶§#🔗]+\s*$")
_HTML_OPEN = re.compile(r"<html[\s>]", re.I)
_HTML_CLOSE = re.compile(r"</(?:html|body)\s*>", re.I)
_REFRESH = re.compile(r"^\s*(\d+)\s*(?:[;,]\s*url\s*=\s*(\S+?)\s*)?$", re.I)
_REDIRECT_MAX_CHARS = 300     # a page that refreshes to another with no more text than this
_LISTS = frozenset({"ul", "ol", "menu"})
_ROW = "tr"
_INDENT = "  "           # one nesting level of a list
_CELL_SEP = " | "

# Reference entries (vdgr_core.parsing.toc): a term of a definition list, a one-row field table
# ("name | Use: main | Type: boolean | Default: true") or a directive table ("Syntax: listen ...",
# "Default: ...", "Context: ..."), and a block whose bold or code term names the anchor it holds
_TERM_MAX_CHARS = 160        # a longer <dt> (or term block) is prose, not a term
TITLE_MAX_CHARS = 100        # an entry's title is its term, cut at a word boundary past this
_FIELD_LABELS = frozenset({"use", "type", "default", "syntax", "context", "scope", "module", "status",
                           "values", "value", "range", "since", "mandatory", "required", "compatibility"})
_KEY_FIELDS = frozenset({"default", "syntax", "type"})
_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z ]{1,20}?)\s*:(.*)$", re.S)
_TERM_TAGS = frozenset({"b", "strong", "code", "tt", "kbd", "var", "samp", "span", "a"})
_BLOCK_TAGS = _PARA | _LINE | frozenset(_HEADINGS) | _CELL | frozenset({"li", "tr", "br"})
# anchored entries (:func:`_anchored_entries`): where an entry's anchor stands, and how many a page needs
_ANCHOR_PARENTS = frozenset({"[document]", "html", "body", "div", "section", "article", "main"})
_ANCHOR_ENCLOSERS = frozenset({"li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "td", "th"})
ANCHORED_MIN = 3
_WORDS = re.compile(r"[^\W_]+")

#: names the rules HTML text is made with (html-2: list items marked and indented, table cells
#: separated by " | "; html-3: reference entries are sections of their own; html-4: option
#: lists in preformatted blocks are entries, a keyword line that reads as prose is none;
#: html-5: bulleted lists of parameters are entries; html-7: a page that leaves out both
#: </body> and </html> is parsed unless it ends inside a tag or its text; html-8: a line break
#: between a <pre>'s highlighted spans breaks the line; html-9: end tags a page leaves out are
#: implied as the HTML standard says (vdgr_core.parsing.html_tree), and a page's run of linked
#: anchors opens entries; html-10: an anchor inside a list or a table opens none, an entry
#: list keeps what it holds besides its terms; html-11: a term's forms on lines of their own
#: are joined with ", ", a note box's heading is its label, class "nav" is furniture; html-12:
#: a table of contents in a definition list opens no entries; html-13: a <pre> holding a help
#: file in Vim's tagged format is read as its sections and tagged entries; html-14: a fold
#: marker (``{{{1``) is no part of a help title); part of the content rules
#: recorded in the manifest (vdgr_core.safety.content_rules), so a change re-parses every
#: HTML document
PARSER_VERSION = "html-14"
_PROSE_WORDS = 6             # plain words outside brackets from which a keyword line is prose
_BRACKETED = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}|\([^()]*\)")
_PLAIN_WORD = re.compile(r"(?<!\S)[A-Za-z]+[.,;]?(?!\S)")
# a parameter's name in a bulleted list (``maxMessageSize``, ``shutdown.enable.ctlc``,
# ``queue.size``): words joined by ``._:-`` or camelCase, not a bold lead-in (``Note``)
_IDENTIFIER = re.compile(r"^(?:[A-Za-z$%][\w$]*(?:[._:-][\w$]+)+|[a-z]+[A-Z]\w*|-{1,2}[A-Za-z][\w-]*)$")


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

    def __init__(self, anchored: "dict[int, str] | None" = None) -> None:
        self.entries: list[list] = [[0, "", []]]
        self.anchored = anchored or {}   # id() of an anchor that opens an entry -> its title
        self.in_anchored = False         # the open entry was opened by such an anchor
        self.lists: list[list] = []      # open lists, innermost last: [ordered, next number]
        self.cells = 0                   # open table cells: breaks inside one are spaces
        self.row_cells: list[int] = []   # cells seen so far in each open table row
        self.section: tuple[int, str] = (0, "")   # the last real heading (level, title)
        self.in_entry = False            # a reference entry is open (until a heading or RESUME)
        self.bare_term = -1              # parts of the open entry when it holds only its term block
        self.in_definition = 0           # inside a <dd> of an entry list: no entries nest there

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
        self.section, self.in_entry, self.in_anchored = (level, title), False, False

    def entry(self, title: str) -> None:
        """Open a reference entry titled ``title`` in the current section."""
        self.entries.append([entry_level(self.section[0]), title, []])
        self.in_entry = True

    def term_block(self, term: str, block: Tag, in_pre: bool) -> None:
        """A block that is a term line (``timeout client <timeout>``): it opens an entry, or
        joins the open one when that holds nothing but term lines so far (several forms of one
        keyword over one description: ``inter``, ``fastinter``, ``downinter``)."""
        current = self.entries[-1]
        if self.in_entry and self.bare_term == len(current[2]):
            current[1] = f"{current[1]}, {term}"
        else:
            self.entry(term)
        self.brk(2)
        self.walk(block, in_pre)
        self.brk(2)
        self.bare_term = len(self.entries[-1][2])

    def resume(self) -> None:
        """Close the open entries: what follows continues the section that holds them."""
        if self.in_entry:
            self.entries.append([self.section[0], RESUME, []])
            self.in_entry = self.in_anchored = False

    def _pre_entries(self, segments: list[Segment]) -> None:
        """A preformatted block that lists options (a manual page's OPTIONS kept in ``<pre>``):
        each option is an entry, lines as they are; the text around them stays in the section."""
        self.brk(2)
        for seg in segments:
            if seg.term is None:
                self.resume()
            else:
                self.entry(_cut_title(seg.term))
            self.text("\n".join(seg.lines))
            self.brk(2)
        self.resume()

    def _pre_help(self, parts: list[HelpPart]) -> None:
        """A preformatted block that is a whole help file in Vim's tagged format
        (:mod:`vdgr_core.parsing.helpfile`): its sections are headings below the page's, its
        tagged items entries, lines as they are."""
        base = self.section[0]
        self.brk(2)
        for part in parts:
            if part.kind == "heading":
                self.heading(base + part.depth, part.title)
            elif part.kind == "entry":
                self.entry(_cut_title(part.title))
            else:
                self.resume()
            self.text("\n".join(part.lines))
            self.brk(2)
        self.resume()

    def _may_open_entry(self) -> bool:
        return not (self.cells or self.lists or self.in_definition or self.in_anchored)

    def _entry_list(self, tag: Tag, in_pre: bool) -> None:
        """A definition list whose terms are entries: each run of ``<dt>`` (aliases, joined
        with ", ") and the ``<dd>`` after it is one entry, its term lines first. What else the
        list holds (a paragraph, or the rest of a page that never closes the list, as a
        browser reads it) is read in its place."""
        self.resume()
        opens = {id(terms[0]): ", ".join(_term_text(t) for t in terms) for terms, _ in _dl_groups(tag)}
        for node in _dl_children(tag):
            if not (isinstance(node, Tag) and node.name in ("dt", "dd")):
                self.visit(node, in_pre)
                continue
            if id(node) in opens:
                self.entry(opens[id(node)])
            self.in_definition += node.name == "dd"
            try:
                self.brk(1)
                self.walk(node, in_pre)
                self.brk(1)
            finally:
                self.in_definition -= node.name == "dd"
        self.resume()

    def _term_list(self, tag: Tag, terms: list[str], in_pre: bool) -> None:
        """A bulleted list whose items each open with a parameter's name (``<li><p><strong>
        maxMessageSize</strong></p><p>Configures ...</p></li>``): each item is an entry."""
        self.resume()
        for term, item in zip(terms, tag.find_all("li", recursive=False)):
            self.entry(term)
            self.in_definition += 1
            try:
                self.brk(1)
                self.walk(item, in_pre)
                self.brk(1)
            finally:
                self.in_definition -= 1
        self.resume()

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
            self.visit(child, in_pre)

    def visit(self, child, in_pre: bool = False) -> None:
        """Add one node of the tree (an element with what it holds, or text) to the entries."""
        if isinstance(child, NavigableString):
            if isinstance(child, _SKIP_STRINGS):
                return
            s = str(child)
            if in_pre and not s.strip() and "\n" in s:
                # a line break between highlighted spans (``</span>\n<span>``): a new line
                self.brk(2 if s.count("\n") > 1 else 1)
                return
            self.text(s if in_pre else _WS.sub(" ", s))
            return
        if not isinstance(child, Tag):
            return
        name = (child.name or "").lower()
        if name in _DROP or _is_furniture(child):
            return
        if name in _HEADINGS and _in_admonition(child):
            self.brk(2)                          # a box's label ("Note"): a line of its text
            self.walk(child, in_pre)
            self.brk(1)
        elif name in _HEADINGS:
            title = _WS.sub(" ", _heading_text(child)).strip()
            self.heading(_HEADINGS[name], _PERMALINK.sub("", title))
        elif name == "a" and id(child) in self.anchored:
            self.entry(self.anchored[id(child)])     # what follows, up to the next one, is its entry
            self.in_anchored = True
        elif name == "dl" and self._may_open_entry() and _is_entry_list(child):
            self._entry_list(child, in_pre)
        elif name == "pre" and self._may_open_entry() and (read := _pre_structure(child)) is not None:
            (self._pre_help if read[0] == "help" else self._pre_entries)(read[1])
        elif name == "ul" and self._may_open_entry() and (terms := _list_terms(child)) is not None:
            self._term_list(child, terms, in_pre)
        elif (name in ("table", "div", "p") and self._may_open_entry()
              and (term := _entry_term(child, self.section[1])) is not None):
            self.term_block(term, child, in_pre)
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


def _dl_children(dl: Tag) -> list:
    """A ``<dl>``'s children in order, with the children of its wrapper ``<div>``s (those
    holding ``<dt>`` or ``<dd>``, as HTML allows) in place of the wrappers."""
    out = []
    for child in dl.children:
        if isinstance(child, Tag) and child.name == "div" and child.find(["dt", "dd"], recursive=False) is not None:
            out.extend(child.children)
        else:
            out.append(child)
    return out


def _dl_groups(dl: Tag) -> list[tuple[list[Tag], list[Tag]]]:
    """The (terms, definitions) runs of a ``<dl>``'s own ``<dt>``/``<dd>`` children (looking
    through wrapper ``<div>``s)."""
    groups: list[tuple[list[Tag], list[Tag]]] = []
    items = [c for c in _dl_children(dl) if isinstance(c, Tag) and c.name in ("dt", "dd")]
    for item in items:
        if item.name == "dt":
            if not groups or groups[-1][1]:
                groups.append(([], []))
            groups[-1][0].append(item)
        elif groups:
            groups[-1][1].append(item)
    return [g for g in groups if g[0]]


def _visible(t: NavigableString, tag: Tag) -> bool:
    """Whether string ``t`` of ``tag`` is shown: no comment or declaration, not in dropped
    elements or page furniture."""
    return not isinstance(t, _SKIP_STRINGS) and not any(
        isinstance(p, Tag) and (p.name in _DROP or _is_furniture(p)) for p in t.parents if p is not tag)


def _visible_strings(tag: Tag):
    for t in tag.find_all(string=True):
        if _visible(t, tag):
            yield str(t)


def _flat(tag: Tag) -> str:
    """A tag's visible text on one line, whitespace collapsed."""
    return _WS.sub(" ", "".join(_visible_strings(tag))).strip()


def _term_text(tag: Tag) -> str:
    """A term's text on one line, as it reads (``AUTO_CD (-J)``), its forms on lines of their
    own joined with ", " (``<dt>-c<br>--clean</dt>``: ``-c, --clean``), cut at a word boundary
    past :data:`TITLE_MAX_CHARS`."""
    forms, current = [], []
    for node in tag.descendants:
        if isinstance(node, Tag):
            if node.name == "br":
                forms.append("".join(current))
                current = []
        elif isinstance(node, NavigableString) and _visible(node, tag):
            current.append(str(node))
    forms.append("".join(current))
    return _cut_title(_PERMALINK.sub("", ", ".join(f for f in (_WS.sub(" ", x).strip() for x in forms) if f)))


def _in_admonition(tag: Tag) -> bool:
    """Whether ``tag`` stands inside a box set apart from the text (:data:`_ADMONITIONS`)."""
    return any(isinstance(p, Tag) and p.name in ("div", "aside", "section")
               and not _ADMONITIONS.isdisjoint(str(c).lower() for c in (p.get("class") or ()))
               for p in tag.parents)


def _pre_structure(pre: Tag) -> "tuple[str, list] | None":
    """What a ``<pre>`` holds besides plain lines, its visible text read once: ``("help",
    parts)`` for a help file in Vim's tagged format (:mod:`vdgr_core.parsing.helpfile`),
    ``("options", segments)`` for an option list (:func:`vdgr_core.parsing.entries.split_entries`,
    option flags only), or None."""
    lines = "".join(_visible_strings(pre)).split("\n")
    if (parts := help_parts(lines)) is not None:
        return "help", parts
    segments = split_entries(lines, options_only=True)
    return ("options", segments) if any(s.term is not None for s in segments) else None


def _list_terms(ul: Tag) -> "list[str] | None":
    """The entry titles of a bulleted list of parameters, or None.

    Every item opens with a bold or code term of one token (``umask``), its first line short
    (``janitor.interval [minutes], available 8.3.3+``); most terms are identifiers
    (:data:`_IDENTIFIER`: ``maxMessageSize``, ``shutdown.enable.ctlc``, not a bold lead-in
    such as ``Note``) and most items say more than their term line.
    """
    items = ul.find_all("li", recursive=False)
    if len(items) < 2 or len(items) != len([c for c in ul.children if isinstance(c, Tag)]):
        return None
    terms, identifiers, described = [], 0, 0
    for li in items:
        lead = _first_child(li)
        line = li
        if isinstance(lead, Tag) and lead.name == "p":
            line, lead = lead, _first_child(lead)
        if not isinstance(lead, Tag) or lead.name not in ("strong", "b", "code", "tt"):
            return None
        name = _flat(lead)
        title = name if line is li else _flat(line)
        if _reads_as_prose(title[len(name):]):       # the description starts in the term's line
            title = name
        if not name or " " in name or len(title) > _TERM_MAX_CHARS:
            return None
        identifiers += bool(_IDENTIFIER.match(name))
        described += len(_flat(li)) > len(title) + 10
        terms.append(_cut_title(title))
    return terms if 2 * identifiers >= len(items) and 2 * described >= len(items) else None


def _first_child(tag: Tag):
    """The first child that is not blank text."""
    return next((c for c in tag.children if not (isinstance(c, NavigableString) and not c.strip())), None)


def _reads_as_prose(syntax: str) -> bool:
    """Whether what follows a keyword's name is a sentence (``is any number of options. An
    option ...``), not its arguments (``[<options>]*``, ``{ if | unless } <condition>``):
    :data:`_PROSE_WORDS` plain words or more once the bracketed groups are taken out."""
    prev = None
    while prev != syntax:
        prev, syntax = syntax, _BRACKETED.sub(" ", syntax)
    return len(_PLAIN_WORD.findall(syntax)) >= _PROSE_WORDS


def _is_entry_list(dl: Tag) -> bool:
    """Whether a ``<dl>`` lists reference entries: every term short and not a field label
    (``Parameters:``), and two entries or more, or one term that is an anchor (``<dt id>``, a
    documentation generator's object description). A table of contents is none: every term a
    link and nothing else, every definition only the lists nested under it (DocBook's and
    AsciiDoc's ``<dl class="toc">``)."""
    groups = _dl_groups(dl)
    if not groups or not any(defs for _, defs in groups):
        return False
    if all(_link_only(t) for ts, _ in groups for t in ts) and all(_lists_only(d) for _, ds in groups for d in ds):
        return False
    terms = [_flat(t) for ts, _ in groups for t in ts]
    if not all(0 < len(t) <= _TERM_MAX_CHARS for t in terms) or all(t.endswith(":") for t in terms):
        return False
    return len(groups) >= 2 or any(t.get("id") for ts, _ in groups for t in ts)


def _link_only(term: Tag) -> bool:
    """Whether ``term``'s text is the text of the links it holds and nothing more."""
    text = _flat(term)
    return bool(text) and text == " ".join(_flat(a) for a in term.find_all("a", href=True)).strip()


def _lists_only(tag: Tag) -> bool:
    """Whether ``tag`` holds no text of its own outside the lists nested in it."""
    def nested(t) -> bool:
        for p in t.parents:
            if p is tag:
                return False
            if p.name in ("dl", "ul", "ol"):
                return True
        return False
    return all(nested(t) for t in tag.find_all(string=True) if t.strip() and not isinstance(t, _SKIP_STRINGS))


def _fields(cells: list[str]) -> dict[str, str]:
    out = {}
    for c in cells:
        m = _FIELD.match(c)
        if m and m.group(1).strip().lower() in _FIELD_LABELS:
            out[m.group(1).strip().lower()] = m.group(2).strip()
    return out


def _entry_term(tag: Tag, section_title: str) -> "str | None":
    """The term of a block that opens a reference entry, or None.

    - a field table: one row of ``name | Use: main | Type: boolean | Default: true`` (the
      term is the cell that is no field), or rows ``Syntax: | listen address ...``,
      ``Default: | ...``, ``Context: | ...`` (the term is the syntax's first word); at least
      two fields, one of them a default, a syntax or a type;
    - a short block (``<div>``, ``<p>``) whose leading bold or code term is the name of an
      anchor it holds (``<b><a name="timeout client"></a>timeout client</b> <timeout>``), or
      is named by the empty anchor just before it (:func:`_named_by_anchor_before`).

    A term the section's own title already names opens no entry (a directive with a heading
    of its own).
    """
    if tag.name == "table":
        rows = tag.find_all("tr")
        if not rows or len(rows) > 8:
            return None
        cells_by_row = [[_flat(c) for c in r.find_all(["td", "th"])]
                        for r in rows]
        if len(rows) == 1:
            cells = cells_by_row[0]
            fields = _fields(cells)
            rest = [c for c in cells if c and not _FIELD.match(c)]
            term = rest[0] if len(rest) == 1 else None
        else:
            fields = _fields([" ".join(cs) for cs in cells_by_row if cs])
            term = (fields.get("syntax") or "").split(" ", 1)[0].rstrip(";") or None
        if term is None or len(fields) < 2 or not (_KEY_FIELDS & set(fields)) or len(term) > _TERM_MAX_CHARS:
            return None
    else:
        text = _flat(tag)
        if not text or len(text) > _TERM_MAX_CHARS or tag.find(_BLOCK_TAGS - _TERM_TAGS) is not None:
            return None
        lead = _first_child(tag)
        if not isinstance(lead, Tag) or lead.name not in _TERM_TAGS:
            return None
        name = _flat(lead)
        anchors = {_WS.sub(" ", str(a.get("name") or a.get("id") or "")).strip().casefold()
                   for a in tag.find_all(["a", "span"]) if a.get("name") or a.get("id")}
        if not name or _reads_as_prose(text[len(name):]):
            return None
        if name.casefold() not in anchors and not _named_by_anchor_before(tag, name):
            return None
        term = text
    term = _cut_title(term)
    if term.casefold() in section_title.casefold().split(" ") or term.casefold() == section_title.casefold():
        return None
    return term


def _named_by_anchor_before(tag: Tag, name: str) -> bool:
    """Whether an empty anchor just before ``tag`` names the term ``name``: each word of the
    anchor's name is one of the term's (``<a name="default_file_permissions"></a>`` before
    ``<p><b>SQLITE_DEFAULT_FILE_PERMISSIONS=N</b></p>``, as SQLite's option lists go)."""
    before = _sibling_block(tag, previous=True)
    if not _is_anchor(before):
        return False
    words = set(_WORDS.findall(str(before.get("name") or before.get("id")).casefold()))
    return bool(words) and words <= set(_WORDS.findall(name.casefold()))


def _cut_title(text: str) -> str:
    """``text`` cut at a word boundary past :data:`TITLE_MAX_CHARS` (marked with an ellipsis)."""
    if len(text) > TITLE_MAX_CHARS:
        cut = text.rfind(" ", 0, TITLE_MAX_CHARS)
        text = text[: cut if cut > TITLE_MAX_CHARS // 2 else TITLE_MAX_CHARS].rstrip(" ,;:") + " …"
    return text


def _anchored_entries(root) -> dict[int, str]:
    """The anchors that open reference entries, by ``id()``, with their titles.

    A page may list its entries as a run of link targets with no heading of their own
    (SQLite's ``pragma.html``: ``<a name="pragma_busy_timeout"></a>``, then the entry, each
    linked from the page's own index). Such an anchor opens an entry titled with the text of
    the first link to it when it stands between blocks (its parent a ``<body>``, ``<div>`` or
    section, or a paragraph it ends: an element, not text, comes next; not a term), is empty,
    is linked from the page, labels no heading (none just before or after it) and no block
    that opens an entry itself (HAProxy's keyword anchors stand before their term blocks); of
    a run of anchors, the first. An anchor inside a list or a table opens none (it would split
    the list or the row) but counts among the page's targets. A heading must hold
    at least :data:`ANCHORED_MIN` of them (a figure's anchor here and there opens none), and
    they must be most of the page's linked targets outside headings (a page whose entries are
    marked otherwise keeps its own).
    """
    titles: dict[str, str] = {}
    for a in root.find_all("a", href=True):
        fragment = str(a["href"]).partition("#")[2]
        if fragment and not titles.get(fragment):
            titles[fragment] = _term_text(a)
    groups: list[dict[int, str]] = [{}]    # the anchors under each heading
    targets = 0
    for a in root.find_all(["a", *_HEADINGS]):
        if a.name in _HEADINGS:
            groups.append({})
            continue
        key = str(a.get("name") or a.get("id") or "")
        if not titles.get(key) or not _is_anchor(a) or _is_anchor(_sibling_block(a, previous=True)):
            continue
        after = _sibling_block(a, previous=False)
        while _is_anchor(after):
            after = _sibling_block(after, previous=False)
        if a.parent is None or not (a.parent.name in _ANCHOR_PARENTS or a.parent.name == "p" and after is not None):
            continue
        if _next_to_heading(a):
            continue
        targets += 1
        if any(p.name in _ANCHOR_ENCLOSERS for p in a.parents):
            continue   # inside a list or table: an entry would split it (no entry rule opens there)
        if after is not None and after.name in ("table", "div", "p") and _entry_term(after, "") is not None:
            continue
        groups[-1][id(a)] = titles[key]
    found = {k: v for g in groups if len(g) >= ANCHORED_MIN for k, v in g.items()}
    return found if len(found) > targets // 2 else {}


def _sibling_block(tag: "Tag | None", previous: bool) -> "Tag | None":
    """The element next to ``tag`` (before it with ``previous``), past blank text; None when
    text comes first."""
    node = tag.previous_sibling if previous else tag.next_sibling
    while node is not None:
        if isinstance(node, Tag):
            return node
        if isinstance(node, NavigableString) and not isinstance(node, _SKIP_STRINGS) and node.strip():
            return None
        node = node.previous_sibling if previous else node.next_sibling
    return None


def _next_to_heading(tag: Tag) -> bool:
    """Whether the text nearest ``tag`` on either side is a heading's (the anchor labels it)."""
    for near in (tag.next_elements, tag.previous_elements):
        for node in near:
            if isinstance(node, Tag) and node.name in _HEADINGS:
                return True
            if isinstance(node, NavigableString) and not isinstance(node, _SKIP_STRINGS) and node.strip():
                if any(isinstance(p, Tag) and p.name in _HEADINGS for p in node.parents):
                    return True
                break
    return False


def _is_anchor(tag: "Tag | None") -> bool:
    """An empty link target (``<a name="x"></a>``)."""
    return (tag is not None and tag.name == "a" and tag.get("href") is None
            and bool(tag.get("name") or tag.get("id")) and not _flat(tag))


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


def _refuse_redirect(soup: BeautifulSoup) -> None:
    for meta in soup.find_all("meta"):
        if str(meta.get("http-equiv", "")).strip().lower() != "refresh":
            continue
        m = _REFRESH.match(str(meta.get("content", "")))
        body = soup.find("body")
        if m and int(m.group(1)) <= 5 and len((body or soup).get_text(" ", strip=True)) <= _REDIRECT_MAX_CHARS:
            target = (m.group(2) or "").strip("'\"")[:200]
            raise DocumentError(DeadLetterReason.REDIRECT, f"the page redirects to {target or 'itself'}")


def cut_at(text: str) -> Optional[str]:
    """Why ``text`` reads as an HTML file cut short, or None when it may end where it does.

    A page may leave out ``</p>``, ``</body>`` and ``</html>`` (SQLite's pages do, and some
    leave a ``<div>`` open too), so open elements prove nothing; a page ends with a tag or a
    line break, and a file cut at some byte ends inside a tag or inside a line of text.

    Examples
    --------
    >>> cut_at("<p>Done.<p>Last paragraph, no end tags: allowed.</p>  ")
    >>> cut_at("<div><p>cut in the mid")
    'it ends inside the text'
    >>> cut_at("<p>cut <a href=")
    'it ends inside a tag'
    """
    parser = HTMLParser(convert_charrefs=False)     # the standard tokenizer, handlers all no-ops
    parser.feed(text)
    if parser.rawdata.lstrip().startswith("<"):     # what it holds back: an unfinished tag or comment
        return "it ends inside a tag"
    return None if text.rstrip(" \t").endswith(("\n", ">")) else "it ends inside the text"


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
        TRUNCATED when the document opens ``<html>``, closes neither it nor ``<body>`` (a page
        may leave both end tags out, as SQLite's do) and ends inside a tag or inside its text
        (:func:`cut_at`); REDIRECT for
        a page that only sends the reader elsewhere (a ``<meta http-equiv="refresh">`` and
        hardly any text of its own, as Texinfo writes for every node name).
    """
    if _HTML_OPEN.search(text) and not _HTML_CLOSE.search(text) and (cut := cut_at(text)):
        raise DocumentError(DeadLetterReason.TRUNCATED, f"neither <html> nor <body> is closed and {cut}")
    soup = html_soup(text)
    _refuse_redirect(soup)
    title_tag = soup.find("title")
    explicit = _WS.sub(" ", title_tag.get_text(" ")).strip() if title_tag else ""
    root = _content_root(soup)
    collector = _Collector(_anchored_entries(root))
    collector.walk(root)
    entries = [(lvl, t, _body(b)) for lvl, t, b in collector.entries]
    if sum(1 for lvl, _, _ in entries if lvl == 1) == 1:
        explicit = ""   # the page's own h1 names it; <title> often adds a site suffix
    return build_document(entries, fallback_title, explicit_title=explicit or None)
