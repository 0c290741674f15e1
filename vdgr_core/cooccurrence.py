"""Sentence-level entity co-occurrence (the weights of entity-entity edges in the H2KG).

A normalized entity name (``vdgr_core.entities.normalize_term``) is found in a sentence when
its characters, spaces removed, equal the concatenation of one or more consecutive normalized
tokens of the sentence. Matching thus respects word boundaries and tolerates the separator
variants that normalization merges: ``wifi`` matches "Wi-Fi", "Wi Fi" and "wifi";
``dl mimo mode`` matches "DL_MIMO_Mode"; ``5g`` matches the "5G" of "5G NR" but not "5GHz".
"""
from __future__ import annotations

from itertools import combinations
from typing import Iterable

from vdgr_core.entities import norm_tokens
from vdgr_core.sentences import split_sentences

__all__ = ["sentence_cooccurrences", "mention_counts", "sentence_mentions", "mention_statistics"]


def _prepare(norms: Iterable[str]) -> list[tuple[str, str]]:
    """Distinct non-empty norms, sorted, each with its space-free matching key."""
    out = []
    for norm in sorted({n for n in norms if n and n.strip()}):
        key = "".join(norm.split())
        if key:
            out.append((norm, key))
    return out


def _compact(sentence: str) -> tuple[str, set[int]]:
    """Concatenated normalized tokens of ``sentence`` and the offsets of token boundaries."""
    toks = norm_tokens(sentence)
    bounds = {0}
    pos = 0
    for t in toks:
        pos += len(t)
        bounds.add(pos)
    return "".join(toks), bounds


def _count_in(compact: str, bounds: set[int], key: str, first_only: bool) -> int:
    count = 0
    start = compact.find(key)
    while start >= 0:
        if start in bounds and start + len(key) in bounds:
            count += 1
            if first_only:
                return 1
        start = compact.find(key, start + 1)
    return count


def sentence_mentions(text: str, norms: Iterable[str]) -> list[tuple[str, ...]]:
    """For each sentence of ``text`` (``split_sentences``), the sorted norms found in it.

    Sentences without any of the norms give an empty tuple, so the list is aligned with
    ``split_sentences(text)``.
    """
    prepared = _prepare(norms)
    out: list[tuple[str, ...]] = []
    for sentence in split_sentences(text):
        compact, bounds = _compact(sentence)
        out.append(tuple(n for n, key in prepared
                         if key in compact and _count_in(compact, bounds, key, True)))
    return out


def sentence_cooccurrences(text: str, norms: Iterable[str]) -> dict[tuple[str, str], int]:
    """Count, for each unordered pair of norms, the sentences of ``text`` containing both.

    Parameters
    ----------
    text:
        A chunk of text; it is split with ``vdgr_core.sentences.split_sentences``.
    norms:
        Normalized entity names (duplicates and empty strings are ignored).

    Returns
    -------
    dict[tuple[str, str], int]
        ``{(a, b): n_sentences}`` with ``a < b``; pairs that never co-occur are absent. Keys are
        inserted in sorted order.

    Examples
    --------
    >>> sentence_cooccurrences("NFC and LTE work. LTE only. NFC, LTE again.", ["nfc", "lte"])
    {('lte', 'nfc'): 2}
    """
    counts: dict[tuple[str, str], int] = {}
    for present in sentence_mentions(text, norms):
        for pair in combinations(present, 2):
            counts[pair] = counts.get(pair, 0) + 1
    return dict(sorted(counts.items()))


def mention_counts(text: str, norms: Iterable[str]) -> dict[str, int]:
    """Number of mentions of each norm in ``text`` (every occurrence, all sentences).

    Norms that do not occur map to 0; keys are sorted.

    Examples
    --------
    >>> mention_counts("Wi-Fi or wifi? Use Wi Fi.", ["wifi", "lte"])
    {'lte': 0, 'wifi': 3}
    """
    return mention_statistics(text, norms)[0]


def mention_statistics(text: str, norms: Iterable[str]) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """:func:`mention_counts` and :func:`sentence_cooccurrences` in one pass over the sentences.

    Each sentence is split and normalized once for both results.

    Returns
    -------
    tuple[dict[str, int], dict[tuple[str, str], int]]
        ``(mention_counts(text, norms), sentence_cooccurrences(text, norms))``.

    Examples
    --------
    >>> mention_statistics("NFC and LTE. LTE only.", ["nfc", "lte"])
    ({'lte': 2, 'nfc': 1}, {('lte', 'nfc'): 1})
    """
    prepared = _prepare(norms)
    counts = {n: 0 for n, _ in prepared}
    pairs: dict[tuple[str, str], int] = {}
    if not prepared:
        return counts, pairs
    for sentence in split_sentences(text):
        compact, bounds = _compact(sentence)
        present = []
        for norm, key in prepared:
            if key in compact:
                n = _count_in(compact, bounds, key, False)
                if n:
                    counts[norm] += n
                    present.append(norm)
        for pair in combinations(present, 2):
            pairs[pair] = pairs.get(pair, 0) + 1
    return counts, dict(sorted(pairs.items()))
