"""The row-at-a-time references of vdgr_core/labels.py's columnar tokenizer and label terms."""
from __future__ import annotations

from typing import Optional, Sequence

from vdgr_core.stopwords import STOP_WORDS
from vdgr_core.tokens import stem, tokens


def content_words(text: str) -> list[str]:
    """Content words of ``text`` with repeats, the query module's way (its tokens, stop words
    and one-letter words dropped): what ``content_words_of`` must give for each text."""
    return [t for t in tokens(text) if t not in STOP_WORDS and (len(t) > 1 or t.isdigit())]


def label_stems(full_path: Sequence[str], summary: Optional[str]) -> list[str]:
    """Stems of a directory's label (empty for a domain root: its path has one title)."""
    if len(full_path) <= 1:
        return []
    return [stem(t) for t in content_words(" ".join(full_path[1:]) + "\n" + (summary or ""))]
