"""Markdown parser: YAML front matter, ATX and setext headings, fenced code kept as text, raw HTML
reduced to its text."""
from __future__ import annotations

import datetime
import re
from typing import Any

import yaml

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml when available

from schemas.errors import DeadLetterReason, DocumentError
from schemas.records import ParsedDocument
from vdgr_core.parsing.inline import strip_markdown_inline
from vdgr_core.parsing.toc import build_document

#: names the rules Markdown text is made with (markdown-2: raw HTML reduced to its text); part of
#: the content rules recorded in the manifest (vdgr_core.safety.content_rules)
PARSER_VERSION = "markdown-2"

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_THEMATIC = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LINK_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S+")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_BULLET = re.compile(r"^\s*[-*+]\s+(?:\[[ xX]\]\s+)?")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(?:\|\s*:?-{1,}:?\s*)+\|?\s*$")
_COMMENT = re.compile(r"<!--.*?-->", re.S)

# Raw HTML in Markdown (CommonMark's tag grammar: quoted attribute values may hold ``>`` and line
# breaks), the code spans it must not touch, and what each tag leaves of itself in the text
_ATTRIBUTE = r"""\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^\s"'=<>`]+|'[^']*'|"[^"]*"))?"""
_RAW_HTML = re.compile(
    r"(?P<code>(?P<ticks>`+)[\s\S]*?(?P=ticks))"
    r"|(?P<dropped><(?P<drop>script|style)\b(?:" + _ATTRIBUTE + r")*\s*>[\s\S]*?</(?P=drop)\s*>)"
    r"|<(?P<open>[A-Za-z][A-Za-z0-9-]*)(?P<attrs>(?:" + _ATTRIBUTE + r")*)\s*/?>"
    r"|</(?P<close>[A-Za-z][A-Za-z0-9-]*)\s*>"
    r"|<!\[CDATA\[(?P<cdata>[\s\S]*?)\]\]>"
    r"|<\?[\s\S]*?\?>|<![A-Za-z][^>]*>", re.I)
_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""", re.I)
#: tags that end a line of text (blocks, line breaks); a table cell ends with `` | ``
_LINE_TAGS = frozenset("address article aside blockquote br caption dd details div dl dt figcaption figure "
                       "footer h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section summary table tbody "
                       "tfoot thead tr ul".split())
_CELL_TAGS = frozenset(("td", "th"))


def _html_piece(m: re.Match) -> str:
    """What one raw-HTML match leaves in the text."""
    if m.group("code") is not None:
        return m.group("code")                       # code spans are verbatim
    if m.group("dropped") is not None:
        return ""                                    # script and style are not text
    if m.group("cdata") is not None:
        return m.group("cdata")
    tag = (m.group("open") or m.group("close") or "").lower()
    if tag == "img":
        alt = _ALT.search(m.group("attrs") or "")
        return next((g for g in alt.groups() if g is not None), "") if alt else ""
    if tag in _LINE_TAGS:
        return "\n"
    if m.group("close") and tag in _CELL_TAGS:
        return " | "
    return ""


def raw_html_to_text(body: str) -> str:
    """Markdown ``body`` with its raw HTML replaced by the HTML's text, outside code.

    Tags are removed and the text between them kept (``<kbd>Ctrl</kbd>`` reads ``Ctrl``, also
    across line breaks and with ``>`` inside attribute values); ``<img>`` leaves its ``alt``
    text; block tags and ``<br>`` end a line; table cells are separated by `` | ``; script and
    style elements, processing instructions and declarations leave nothing. Fenced code and code
    spans are left as written, and so are autolinks (``<https://...>``) and a lone ``<``.

    Examples
    --------
    >>> raw_html_to_text('Use the <span title="a>b">fallback tag</span> instead.')
    'Use the fallback tag instead.'
    """
    if "<" not in body:
        return body
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if prose:
            text = _RAW_HTML.sub(_html_piece, "\n".join(prose))
            out.append(re.sub(r"(?: \| )+[ \t]*(?=\n|$)", "", text))     # no cell bar ends a row
            prose.clear()

    for line in body.split("\n"):
        if fence is not None:
            out.append(line)
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            flush()
            fence = m.group(1)
            out.append(line)
            continue
        prose.append(line)
    flush()
    return "\n".join(out)


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple, set)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def split_front_matter(text: str) -> tuple[dict, str]:
    """Separate YAML front matter (between ``---`` lines at the very top) from the body.

    Returns
    -------
    (dict, str)
        The front matter mapping ({} when absent) and the remaining text.

    Raises
    ------
    DocumentError
        TRUNCATED when the front matter is never closed, PARSE_ERROR when it is not a
        YAML mapping.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        raise DocumentError(DeadLetterReason.TRUNCATED, "front matter opened with --- is never closed")
    try:
        data = yaml.load("\n".join(lines[1:end]), Loader=_SAFE_LOADER)
    except yaml.YAMLError as e:
        raise DocumentError(DeadLetterReason.PARSE_ERROR, f"invalid YAML front matter: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DocumentError(DeadLetterReason.PARSE_ERROR,
                            f"front matter is a {type(data).__name__}, not a mapping")
    return data, "\n".join(lines[end + 1:])


def _body_line(line: str) -> str:
    line = _QUOTE.sub("", line)
    if "|" in line and line.strip().startswith("|"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        line = " | ".join(strip_markdown_inline(c) for c in cells)
        return line
    line = _BULLET.sub("", line)
    return strip_markdown_inline(line.strip())


def parse_markdown(text: str, fallback_title: str) -> ParsedDocument:
    """Parse Markdown text into a ParsedDocument.

    Parameters
    ----------
    text:
        Decoded document text (``\\n`` newlines).
    fallback_title:
        Title used when neither front matter nor a single level-1 heading gives one.

    Returns
    -------
    ParsedDocument
        Sections from ATX/setext headings (none from inside fenced code), body text with
        inline markup stripped, metadata = sorted front-matter pairs.

    Raises
    ------
    DocumentError
        TRUNCATED (unclosed front matter), PARSE_ERROR (front matter not valid YAML).
    """
    front, body = split_front_matter(text)
    body = raw_html_to_text(_COMMENT.sub("", body))
    entries: list[list] = [[0, "", []]]
    fence: str | None = None
    para_len = 0
    for line in body.split("\n"):
        lines = entries[-1][2]
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
                lines.append("")
            else:
                lines.append(line.rstrip())
            continue
        m = _FENCE.match(line)
        if m:
            fence = m.group(1)
            para_len = 0
            lines.append("")
            continue
        if not line.strip():
            lines.append("")
            para_len = 0
            continue
        m = _ATX.match(line)
        if m:
            entries.append([len(m.group(1)), strip_markdown_inline(m.group(2) or ""), []])
            para_len = 0
            continue
        m = _SETEXT.match(line)
        if m and para_len > 0:
            title = " ".join(lines[-para_len:])
            del lines[-para_len:]
            entries.append([1 if m.group(1)[0] == "=" else 2, title, []])
            para_len = 0
            continue
        if _THEMATIC.match(line) or _TABLE_SEP.match(line) or _LINK_DEF.match(line):
            if _THEMATIC.match(line):
                lines.append("")
                para_len = 0
            continue
        lines.append(_body_line(line))
        para_len += 1
    title = front.get("title")
    metadata = tuple(sorted((str(k), _freeze(v)) for k, v in front.items()))
    return build_document(
        [(lvl, t, "\n".join(b)) for lvl, t, b in entries],
        fallback_title,
        explicit_title=str(title) if title is not None else None,
        metadata=metadata,
    )
