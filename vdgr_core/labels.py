"""Directory labels: the words the TOC route matches, shared by the layout writer and the route.

A directory's label is its title path below the domain (document, folders, headings) plus its
summary; a domain root has none. Stems are the query module's tokens (lower-cased, stop words
dropped, light stemming); the layout stores each stem as a 64-bit key (``label_key``), so the
vocabulary needs no fixed-width strings and a query stem is found with one ``searchsorted``.
"""
from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vdgr_core.stopwords import STOP_WORDS
from vdgr_core.tokens import stem as _stem

_STOP_ARRAY = pa.array(sorted(STOP_WORDS), pa.string())


def label_key(stem: str) -> int:
    """The 64-bit key of a stem (blake2b; equal on every machine)."""
    return int.from_bytes(hashlib.blake2b(stem.encode("utf-8"), digest_size=8).digest(), "little")


def content_words_of(texts: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The content words of many texts at once (their tokens with repeats, stop words and
    one-letter words other than digits dropped), with Arrow's kernels: the words of every text
    in order, flattened, and the text each word belongs to.

    The same tokens as :func:`vdgr_core.tokens.tokens` (a run of ``[a-z0-9]`` and its trailing
    ``+``): a space is put after every token, the text split on everything else, and a ``+``
    left at the start of a piece (one that followed a token) dropped.
    """
    low = pc.utf8_lower(pc.fill_null(texts, ""))
    spaced = pc.replace_substring_regex(low, pattern=r"([a-z0-9]+\+*)", replacement=r"\1 ")
    pieces = pc.split_pattern_regex(spaced, pattern=r"[^a-z0-9+]+")
    words = pc.utf8_ltrim(pieces.flatten(), characters="+")
    owner = np.repeat(np.arange(len(texts)), pc.list_value_length(pieces).to_numpy(zero_copy_only=False))
    keep = pc.and_(pc.and_(pc.not_equal(words, ""), pc.invert(pc.is_in(words, value_set=_STOP_ARRAY))),
                   pc.or_(pc.greater(pc.utf8_length(words), 1), pc.utf8_is_digit(words)))
    return words.filter(keep), owner[keep.to_numpy(zero_copy_only=False)]


def label_keys_of(words: pa.Array) -> np.ndarray:
    """``label_key(stem(word))`` of every word (stemmed and hashed once per distinct word)."""
    if len(words) == 0:
        return np.zeros(0, dtype=np.uint64)
    enc = pc.dictionary_encode(words)
    keys = np.array([label_key(_stem(w)) for w in enc.dictionary.to_pylist()], dtype=np.uint64)
    return keys[enc.indices.to_numpy(zero_copy_only=False)]
