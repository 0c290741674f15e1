"""The passage shown for a section: the whole section when it is short, else its matched chunks
merged in reading order, with context.

A section of at most :data:`WHOLE_SECTION_CHUNKS` chunks is a unit a reader wants whole (a
reference entry, a step list, a short how-to): its passage is all of it. A longer one starts at
its beginning too (the entry's term and defining lines, the how-to's lead-in), then its best
matched chunks.
Chunks of one section overlap (each starts with the last words of the one before, see
:func:`vdgr_core.chunking.split_text`); adjacent chunks are joined without repeating that
overlap, non-adjacent ones with an ellipsis line. The sentence before the first matched chunk
and the sentence after the last one (from the neighbouring chunks of the same section) are
added as context.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from vdgr_core.query.view import IndexView
from vdgr_core.sentences import split_sentences

MAX_CHUNKS = 4          # matched chunks merged into one passage (the best ones)
WHOLE_SECTION_CHUNKS = 3    # a section of at most this many chunks is shown whole
GAP = "\n…\n"
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Passage:
    """Text of a section's passage and the content rows it spans (reading order)."""

    text: str
    rows: tuple[int, ...]


def join_overlapping(a: str, b: str) -> str:
    """``a`` then ``b`` without the words ``b`` repeats from the end of ``a``.

    Examples
    --------
    >>> join_overlapping("one two three four", "three four five six")
    'one two three four five six'
    >>> join_overlapping("alpha beta", "gamma delta")
    'alpha beta\\ngamma delta'
    """
    words = list(_WORD.finditer(a))
    for m in words[max(0, len(words) - 64):]:
        tail = a[m.start():]
        if b.startswith(tail) and (len(b) == len(tail) or b[len(tail)].isspace()):
            return a + b[len(tail):]
    return a + "\n" + b


def _context_before(text: str) -> str:
    sents = split_sentences(text)
    return sents[-1] if sents else ""


def _context_after(text: str) -> str:
    sents = split_sentences(text)
    return sents[0] if sents else ""


def section_passage(data: IndexView, section: int, matched: Sequence[int], context: bool = True) -> Passage:
    """The passage of ``section`` around its ``matched`` content rows (best first).

    A section of at most :data:`WHOLE_SECTION_CHUNKS` chunks is kept whole. Otherwise its
    first chunk and at most :data:`MAX_CHUNKS` - 1 matched chunks (the best) are kept, merged
    in reading order; with ``context`` the neighbouring sentences inside the section are added.
    """
    c = data.contents
    members = [int(r) for r in data.sections.rows[section]]
    pos = {r: i for i, r in enumerate(members)}
    if len(members) <= WHOLE_SECTION_CHUNKS:
        keep = members
    else:
        best = [int(r) for r in matched if int(r) in pos and int(r) != members[0]][: MAX_CHUNKS - 1]
        keep = sorted({members[0], *best}, key=pos.__getitem__)
    parts: list[str] = []
    text = ""
    prev = None
    for r in keep:
        if prev is None:
            text = c.text[r]
        elif pos[r] == pos[prev] + 1:
            text = join_overlapping(text, c.text[r])
        else:
            parts.append(text)
            text = c.text[r]
        prev = r
    parts.append(text)
    body = GAP.join(parts)
    if context:
        first, last = pos[keep[0]], pos[keep[-1]]
        if first > 0:
            before = _context_before(c.text[members[first - 1]])
            if before and before not in body[: len(before) + 200]:
                body = join_overlapping(before, body)
        if last + 1 < len(members):
            after = _context_after(c.text[members[last + 1]])
            if after:
                body = join_overlapping(body, after)
    return Passage(body, tuple(keep))
