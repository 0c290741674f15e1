"""Sentence splitting shared by chunking, co-occurrence counting and summaries."""
from __future__ import annotations

import re

# A sentence ends at . ! ? (optionally followed by quotes/brackets) before whitespace and an
# upper-case letter, digit or opening quote, or at a line break. Common abbreviations and
# decimal numbers / version strings ("v2.1", "e.g.") do not end a sentence.
_ABBREV = {"e.g", "i.e", "etc", "vs", "fig", "no", "mr", "mrs", "dr", "approx", "cf", "al", "st"}
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences; lines are always boundaries. Empty pieces are dropped.

    Examples
    --------
    >>> split_sentences("Press Power. Then tap OK.\\nDone")
    ['Press Power.', 'Then tap OK.', 'Done']
    >>> split_sentences("Wait a little (e.g. 4 or 5 seconds). Then retry.")
    ['Wait a little (e.g. 4 or 5 seconds).', 'Then retry.']
    """
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        start = 0
        for m in _BOUNDARY.finditer(line):
            piece = line[start:m.start()].strip()
            last = piece.rsplit(None, 1)[-1].rstrip(".").lstrip("(\"'[").lower() if piece else ""
            if last in _ABBREV or (len(last) == 1 and last.isalpha()):
                continue
            if piece:
                out.append(piece)
            start = m.end()
        tail = line[start:].strip()
        if tail:
            out.append(tail)
    return out
