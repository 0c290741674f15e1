"""Help files in Vim's tagged format: sections and entries found by their tags.

Vim's documentation (and the help files of its plugins, and their HTML renderings, where the
whole file is one ``<pre>``) marks its structure in the text (``:help help-writing``):

- a line of ``=`` separates sections; the next line is the section's title, its tags at the
  right (``1. Vim arguments            *vim-arguments*``);
- a line ending in ``~`` is a heading inside a section (``Options summary ~``);
- a line holding only tags (``*:redi* *:redir*``, right-aligned) opens an entry: the item on
  the next line (``:redi[r][!] > {file}   Redirect messages to file {file}.``), its
  description indented below;
- a line that starts with a tag and goes on with text (``*g:netrw_winsize*  specify initial
  size of new windows ...``) is an entry of its own, in a list of such lines; so is a line
  of text with its tags at the right (``abs({expr})      *abs()*``, ``INCOMPATIBLE CHANGES
  *incompatible-6*``), titled with its text.

A fold marker ending a line (``{{{1``, ``}}}``) is not part of a title or a tag line.
A file is read so when its first line names it by a tag (``*usr_44.txt*  For Vim version
9.0``) and it has a separator, or when it holds enough tag-only lines.

An entry is titled with its item as it reads up to the first tab or run of spaces
(``:redi[r][!] > {file}``, ``--clean``, ``'aleph' 'al'``), or its first tag when the item
line is prose (more than four words, the first a word); it runs to the next entry, heading or
separator. Tags stay in the text (``*--clean*``): a user may search for them.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Optional

_TAG = r"\*[^\s*|]+\*"
_TAG_LINE = re.compile(rf"^\s*{_TAG}(?:\s+{_TAG})*\s*$")
_TRAILING_TAGS = re.compile(rf"^(\S.*?)(?:\t|\s{{2,}})\s*{_TAG}(?:\s+{_TAG})*\s*$")
# a list's term: its tag a few spaces in at most, then its text
_LEADING_TAG = re.compile(rf"^ {{0,3}}({_TAG})(?:\t|\s{{2,}})\s*\S")
_SEPARATOR = re.compile(r"^={40,}\s*$")
_HEADER = re.compile(rf"^\s*\*[^\s*|]+\.txt\*(?:\s|$)")       # *name.txt*  description
_COLUMN_HEADING = re.compile(r"^(\S.*?)\s*~\s*$")
_ITEM = re.compile(r"^\s*(\S.*?)(?:\t|\s{2,}|$)")
_FOLD = re.compile(r"\s*(?:\{\{\{|\}\}\})\d?\s*$")      # a fold marker ending a line (``{{{1``)
# a tag line as help files write it, right-aligned (a reST line of emphasis, ``   *name*``, is not)
_RIGHT_ALIGNED = re.compile(r"^(?:\t|\s{8,})")
MIN_TAG_LINES = 3               # tag-only lines a text needs to be read as a help file
TITLE_MAX_CHARS = 80
TERM_MAX_WORDS = 4              # an item line of more words, starting with a letter, is prose


class HelpPart(NamedTuple):
    """One piece of a help file: ``kind`` "text" (lines before any heading or between
    entries), "heading" (``depth`` 1 after a separator, 2 for a ``~`` heading) or "entry"."""

    kind: str
    title: str
    depth: int
    lines: list[str]


def is_help_file(lines: list[str]) -> bool:
    """Whether ``lines`` read as a tagged help file: its first line names it by a tag
    (``*usr_44.txt*  For Vim version 9.0``) over a section separator, or it holds enough
    right-aligned tag-only lines and a separator, or many such lines."""
    head = next((ln for ln in lines if ln.strip()), "")
    tags = sum(1 for ln in lines if _TAG_LINE.match(ln) and _RIGHT_ALIGNED.match(ln))
    separators = sum(1 for ln in lines if _SEPARATOR.match(ln))
    if _HEADER.match(head) and separators:
        return True
    return tags >= MIN_TAG_LINES and (separators >= 1 or tags >= 3 * MIN_TAG_LINES)


def _title(text: str) -> str:
    """A heading's or item's text without its tags' stars and trailing tags: ``*44.1*  Basic
    syntax commands  *syn-cmds*`` -> ``44.1 Basic syntax commands``."""
    text = re.sub(rf"(?:\s+{_TAG})+\s*$", "", text.strip())
    return " ".join(re.sub(_TAG, lambda m: _tag_name(m.group(0)), text).split())


def _tag_name(tag: str) -> str:
    return tag.strip().strip("*")


def _item_title(line: str, tags: list[str]) -> str:
    """The entry's title: the item as it reads up to its description, or its first tag when the
    line is prose."""
    m = _ITEM.match(line)
    item = m.group(1).strip() if m else ""
    term_like = bool(item) and (not item[0].isalnum() or len(item.split()) <= TERM_MAX_WORDS)
    if not term_like or len(item) > TITLE_MAX_CHARS:
        return _tag_name(tags[0]) if tags else item[:TITLE_MAX_CHARS]
    return item


def _tagged_entry(parts: list[HelpPart], lines: list[str], i: int, line: str) -> HelpPart:
    """The entry a tag-only line ``lines[i]`` (as written: ``line``) opens, titled by the item
    on the next non-blank line; an entry still holding only tag lines (more tags of one item)
    is taken into it."""
    tags = re.findall(_TAG, lines[i])
    if parts[-1].kind == "entry" and all(_TAG_LINE.match(_FOLD.sub("", x)) for x in parts[-1].lines if x.strip()):
        tags = re.findall(_TAG, " ".join(parts[-1].lines)) + tags
        line = "\n".join([*parts.pop().lines, line])
    nxt = next((x for x in lines[i + 1:] if x.strip()), "")
    if nxt and not _TAG_LINE.match(nxt) and not _SEPARATOR.match(nxt):
        return HelpPart("entry", _item_title(nxt, tags), 0, [line])
    return HelpPart("entry", _tag_name(tags[0]), 0, [line])


def help_parts(lines: list[str]) -> Optional[list[HelpPart]]:
    """The sections and entries of a tagged help file (see the module docstring), or None when
    ``lines`` do not read as one (:func:`is_help_file`)."""
    if not is_help_file(lines):
        return None
    text, lines = lines, [_FOLD.sub("", ln) for ln in lines]     # marks read without fold markers
    parts: list[HelpPart] = [HelpPart("text", "", 0, [])]
    after_separator = False
    for i, line in enumerate(lines):
        if _SEPARATOR.match(line):
            after_separator = True
            parts.append(HelpPart("text", "", 0, []))      # a separator closes the open entry
            continue
        if not line.strip():
            parts[-1].lines.append("")
            continue
        section_title, after_separator = after_separator, False
        if section_title and not _TAG_LINE.match(line):
            parts.append(HelpPart("heading", _title(line), 1, [text[i]]))
        elif (m := _COLUMN_HEADING.match(line)) and not line[0].isspace():
            parts.append(HelpPart("heading", m.group(1).strip(), 2, []))
        elif _TAG_LINE.match(line):
            parts.append(_tagged_entry(parts, lines, i, text[i]))
        elif (m := _TRAILING_TAGS.match(line)) and not line[0].isspace():
            # an item or a heading with its tags at the right (``abs({expr})   *abs()*``)
            parts.append(HelpPart("entry", _title(m.group(1)), 0, [text[i]]))
        elif (m := _LEADING_TAG.match(line)) and not _HEADER.match(line):
            parts.append(HelpPart("entry", _tag_name(m.group(1)), 0, [text[i]]))
        else:
            parts[-1].lines.append(text[i])
    return [p for p in parts if p.kind != "text" or any(ln.strip() for ln in p.lines)]


__all__ = ["HelpPart", "help_parts", "is_help_file"]
