"""Evidence text cut into the units an extractive answer quotes.

An evidence text keeps its source's line breaks: hard-wrapped paragraphs, list items, table
rows (``a | b``), code blocks. An answer must quote a procedure or a command whole and must not
cut a sentence at a source line break, so the text is read as blocks first:

- paragraphs are separated by blank lines; inside one, a line is joined to the next when the
  next starts in lower case, the line leaves a parenthesis open or ends with a comma or
  hyphen, or it is long and ends in a lower-case word (a hard wrap); otherwise the break is
  kept;
- **steps**: consecutive list items (``1.``, ``2)``, ``-``, ``*``, ``•``), each with its
  wrapped continuation lines, are one unit; the sentence before them is their ``lead``;
- **rows**: a table row (a line with ``|`` between cells) is one unit; the table's first row
  is its ``lead``;
- **commands**: a shell command line (``$ cmd``, ``# cmd``, ``sudo cmd``, ``cmd --option``, or
  alone as a paragraph ``cmd`` with a quoted, path or operator argument) is one unit with the
  sentence before it as its lead;
- **lines**: any other paragraph of several lines kept apart (an HTML list, a code block) is
  one unit, unless no line of it closes with punctuation: then it is a table whose cells lost
  their separators (HTML), each line a row under the first (not an interactive session:
  ``>>>`` / ``...`` prompts, a doctest, stays one block);
- **sentences**: the rest, split on sentence boundaries (:func:`vdgr_core.sentences.split_sentences`
  on the rejoined paragraph).

A heading (a short line without closing punctuation standing alone, or the section's own title)
is never a unit. Long blocks (more than :data:`MAX_BLOCK_LINES` lines or
:data:`MAX_BLOCK_CHARS` characters) are cut into their items, never inside one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from vdgr_core.sentences import split_sentences

MAX_BLOCK_LINES = 12
MAX_BLOCK_CHARS = 1200
HEADING_MAX_WORDS = 8
WRAP_MIN_CHARS = 50          # a line this long ending in a lower-case word is hard-wrapped

_ITEM = re.compile(r"^\s*(?:\d{1,3}[.)]|\(\d{1,3}\)|[-*•‣▪◦+])\s+\S")
_ROW = re.compile(r"\S\s*\|\s*\S")
_COMMAND = re.compile(r"^\s*(?:[$#]\s+[\w./~-]|sudo\s+\S|[a-z][\w.+-]*(?:\s+\S+)*?\s+--?[a-z][\w-]*)")
_PROMPT = re.compile(r"^(?:>>>|\.\.\.)(?:\s|$)")   # an interactive session (a doctest): code
_CODE_CHARS = re.compile(r"[:'\"$={}<>/\\]")      # an argument holding one reads as code
_CLOSED = re.compile(r"[.!?:;][\"'`)\]]*$")     # a line ending a sentence or a clause


@dataclass(frozen=True)
class Unit:
    """One quotable piece of an evidence text.

    Attributes
    ----------
    text : str
        As quoted (a block keeps its lines).
    kind : str
        ``sentence``, ``steps``, ``row``, ``command`` or ``lines``.
    pos : int
        Reading order inside the evidence text.
    lead : str
        The sentence introducing a block (or a table's header row); scored with it, and quoted
        before it when it ends with a colon.
    para : int
        The number of the paragraph it comes from, in reading order.
    """

    text: str
    kind: str
    pos: int
    lead: str = ""
    para: int = 0        # the paragraph (blank-line separated) the unit comes from

    @property
    def block(self) -> bool:
        """True for a unit quoted on its own lines (anything but a sentence)."""
        return self.kind != "sentence"

    def quoted(self, with_lead: bool = False) -> str:
        """The text as an answer quotes it: a block's lead first when it ends with a colon
        (or ``with_lead``); a table row without its header."""
        if self.block and self.kind != "row" and self.lead and (with_lead or self.lead.rstrip().endswith(":")):
            return f"{self.lead.rstrip()}\n{self.text}"
        return self.text


def _paragraphs(text: str) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip():
            out[-1].append(line.rstrip())
        elif out[-1]:
            out.append([])
    return [p for p in out if p]


def _code_like(s: str) -> bool:
    """A line that reads as a command with code-like arguments (``git show :/'as revision
    23456'``): a lower-case first word, an argument holding a quote, a path or an operator,
    and no closing punctuation. Taken for a command only standing alone as a paragraph: a
    hard-wrapped line of prose can look the same (``difference is that ... return "found" or``)."""
    words = s.split()
    return (len(words) >= 2 and s[:1].islower() and not _CLOSED.search(s) and len(s) < 200
            and any(_CODE_CHARS.search(w) for w in words[1:]))


def _kind(line: str) -> str:
    if _ITEM.match(line):
        return "item"
    if _ROW.search(line) and "|" in line:
        return "row"
    s = line.strip()
    if _COMMAND.match(s) and not _CLOSED.search(s.rstrip(".")) and len(s) < 200 and not s.endswith("."):
        return "command"
    return "text"


def _joins(prev: str, nxt: str) -> bool:
    """Whether ``nxt`` continues ``prev`` (a hard wrap) rather than starting a new line."""
    p, n = prev.rstrip(), nxt.lstrip()
    if not n or _CLOSED.search(p):
        return False
    return (n[0].islower() or p.count("(") > p.count(")") or p.endswith((",", "-"))
            or (len(p) >= WRAP_MIN_CHARS and p[-1].isalpha() and p[-1].islower() and not _ITEM.match(nxt)))


def _is_heading(line: str, titles: set[str]) -> bool:
    s = line.strip()
    if s.casefold() in titles:
        return True
    return (len(s.split()) <= HEADING_MAX_WORDS and not re.search(r"[.!?:;,]$", s)
            and not _ITEM.match(s) and not _PROMPT.match(s) and "|" not in s and s.count("(") == s.count(")")
            and not re.search(r"\w[/.@]\w", s))         # a URL, a path or an address is not a title


def _lines(par: list[str]) -> list[tuple[str, str]]:
    """A paragraph's logical lines with their kinds (hard wraps and item continuations joined)."""
    out: list[tuple[str, str]] = []
    for line in par:
        k = _kind(line)
        if k == "text" and len(par) == 1 and _code_like(line.strip()):
            k = "command"       # a code line standing alone, not a hard-wrapped line of prose
        if out and k == "text":
            pk, pl = out[-1]
            if (pk == "item" and not _CLOSED.search(pl.rstrip())) or (pk == "text" and _joins(pl, line)) \
                    or (pk == "item" and line.lstrip()[:1].islower()):
                out[-1] = (pk, f"{pl.rstrip()} {line.strip()}")
                continue
        out.append((k, line.strip()))
    return out


def _chunks(items: list[str]) -> Iterable[list[str]]:
    """``items`` as one block, or cut between items when it is too long."""
    if len(items) <= MAX_BLOCK_LINES and sum(len(i) + 1 for i in items) <= MAX_BLOCK_CHARS:
        yield items
        return
    cur: list[str] = []
    for it in items:
        if cur and (len(cur) >= MAX_BLOCK_LINES or sum(len(i) + 1 for i in cur) + len(it) > MAX_BLOCK_CHARS):
            yield cur
            cur = []
        cur.append(it)
    if cur:
        yield cur


def answer_units(text: str, titles: Iterable[str] = ()) -> list[Unit]:
    """The quotable units of an evidence ``text`` in reading order (see the module docstring).

    Parameters
    ----------
    text : str
        The evidence text (line breaks as in the source).
    titles : iterable of str
        The section's title and path: a line equal to one of them is a heading.

    Examples
    --------
    >>> [u.kind for u in answer_units("Reset it:\\n1. Hold WPS.\\n2. Press power.\\n\\nDone now.")]
    ['sentence', 'steps', 'sentence']
    >>> answer_units("It has no pinhole (model\\nSKU-1) at all.")[0].text
    'It has no pinhole (model SKU-1) at all.'
    """
    heads = {t.strip().casefold() for t in titles if t and t.strip()}
    units: list[Unit] = []
    last_sentence = ""
    para = 0

    def add(kind: str, body: str, lead: str = "") -> None:
        nonlocal last_sentence
        units.append(Unit(body, kind, len(units), lead, para))
        last_sentence = body if kind == "sentence" else ""

    for para, par in enumerate(_paragraphs(text)):
        lines = _lines(par)
        if len(lines) == 1 and lines[0][0] == "text" and _is_heading(lines[0][1], heads):
            continue
        i = 0
        while i < len(lines):
            kind, line = lines[i]
            j = i + 1
            while j < len(lines) and lines[j][0] == kind:
                j += 1
            run = [ln for _, ln in lines[i:j]]
            if kind == "item":
                for part in _chunks(run):
                    add("steps", "\n".join(part), last_sentence)
            elif kind == "row":
                header = run[0] if len(run) > 1 else ""
                for ln in run[1:] if header else run:
                    add("row", ln, header)
            elif kind == "command":
                for part in _chunks(run):
                    add("command", "\n".join(part), last_sentence)
            else:
                run = [r for r in run if r.casefold() not in heads]
                if len(run) > 2 and not any(_CLOSED.search(r) for r in run) \
                        and not any(_PROMPT.match(r) for r in run):
                    # lines without closing punctuation: a table (or menu) whose cells lost
                    # their separators; each line is a row under the first
                    for ln in run[1:]:
                        add("row", ln, run[0])
                    run = []
                # a heading line over text: at the start or after a closed line, before a
                # line starting in upper case
                run = [r for k, r in enumerate(run)
                       if not (k + 1 < len(run) and _is_heading(r, heads) and run[k + 1][:1].isupper()
                               and (k == 0 or _CLOSED.search(run[k - 1])))]
                if len(run) > 1 and not all(_CLOSED.search(r) for r in run):
                    for part in _chunks(run):
                        add("lines", "\n".join(part), last_sentence)
                    run = []
                for ln in run:
                    for sent in split_sentences(ln):
                        if sent.casefold() not in heads:
                            add("sentence", sent)
            i = j
    return units
