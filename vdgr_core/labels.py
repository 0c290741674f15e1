"""Directory labels: the words the TOC route matches, shared by the layout writer and the route.

A directory's label is its title path below the domain (document, folders, headings) plus its
summary; a domain root has none. Stems are the query module's tokens (lower-cased, stop words
dropped, light stemming); the layout stores each stem as a 64-bit key (``label_key``), so the
vocabulary needs no fixed-width strings and a query stem is found with one ``searchsorted``.
"""
from __future__ import annotations

import hashlib
from typing import Optional, Sequence

from vdgr_core.tokens import stem as _stem, tokens
from vdgr_core.store.tantivy_shard import _STOP


def content_words(text: str) -> list[str]:
    """Content words of ``text`` with repeats (BM25 needs term frequencies)."""
    return [t for t in tokens(text) if t not in _STOP and (len(t) > 1 or t.isdigit())]


def label_stems(full_path: Sequence[str], summary: Optional[str]) -> list[str]:
    """Stems of a directory's label (empty for a domain root: its path has one title)."""
    if len(full_path) <= 1:
        return []
    text = " ".join(full_path[1:]) + "\n" + (summary or "")
    return [_stem(t) for t in content_words(text)]


def label_key(stem: str) -> int:
    """The 64-bit key of a stem (blake2b; equal on every machine)."""
    return int.from_bytes(hashlib.blake2b(stem.encode("utf-8"), digest_size=8).digest(), "little")
