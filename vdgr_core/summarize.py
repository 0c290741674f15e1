"""Extractive summaries for content nodes and bottom-up summaries for directory nodes.

Deterministic and offline: sentences are scored by term-frequency centrality within the
text, overlap with the title and a slight lead bias; ties go to the earlier sentence.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Sequence

from vdgr_core.entities import STOPWORDS
from vdgr_core.sentences import split_sentences

__all__ = ["extractive_summary", "directory_summary", "trim_to"]

_WORD = re.compile(r"[^\W_]+")
_ELLIPSIS = "..."
_TITLE_WEIGHT = 0.5
_LEAD_WEIGHT = 0.15
_MAX_CHILD_SENTENCES = 3
# Summaries are pure functions of their arguments and a corpus repeats many texts (manuals of
# several models and versions), so results are memoized per process.
_MEMO_SIZE = 8192


_MARKUP = re.compile(r"^(?:#{1,6}\s+|[-*+\u2022>]\s+)+")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _sentences(text: str) -> list[str]:
    """Whitespace-collapsed sentences with leading heading / bullet markers removed."""
    out = []
    for s in split_sentences(text):
        s = _MARKUP.sub("", _collapse(s))
        if s:
            out.append(s)
    return out


def _content_words(sentence: str) -> set[str]:
    return {w for w in _WORD.findall(sentence.casefold()) if len(w) > 1 and w not in STOPWORDS}


def trim_to(text: str, max_chars: int) -> str:
    """Whitespace-collapsed ``text`` cut to at most ``max_chars`` characters at a word boundary.

    A cut text ends with ``"..."`` (counted in ``max_chars``); a single word longer than the
    budget is cut inside the word.
    """
    text = _collapse(text)
    if max_chars <= 0:
        return ""
    if len(text) <= max_chars:
        return text
    if max_chars <= len(_ELLIPSIS):
        return text[:max_chars]
    budget = max_chars - len(_ELLIPSIS)
    cut = text[:budget + 1]
    space = cut.rfind(" ")
    head = cut[:space] if space > 0 else text[:budget]
    head = head.rstrip(" ,;:-(")
    return head + _ELLIPSIS


def _rank(sentences: Sequence[str], title: str) -> list[int]:
    """Indices of ``sentences`` from best to worst (stable on ties: earlier first)."""
    words = [_content_words(s) for s in sentences]
    tf: dict[str, int] = {}
    for ws in words:
        for w in ws:
            tf[w] = tf.get(w, 0) + 1
    raw = [sum(tf[w] for w in ws) / math.sqrt(len(ws)) if ws else 0.0 for ws in words]
    top = max(raw, default=0.0) or 1.0
    title_words = _content_words(title)
    n = len(sentences)
    scores = []
    for i, ws in enumerate(words):
        centrality = raw[i] / top
        overlap = len(ws & title_words) / len(title_words) if title_words else 0.0
        lead = 1.0 - i / n
        score = centrality + _TITLE_WEIGHT * overlap + _LEAD_WEIGHT * lead
        scores.append(round(score, 9))
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    full = [i for i in order if len(words[i]) >= 3]    # not headings or fragments
    return full if full else order


def _select(sentences: Sequence[str], order: Sequence[int], max_sentences: int,
            max_chars: int) -> list[int]:
    chosen: list[int] = []
    used = 0
    for i in order:
        if len(chosen) >= max_sentences:
            break
        extra = len(sentences[i]) + (1 if chosen else 0)
        if chosen and used + extra > max_chars:
            continue
        chosen.append(i)
        used += extra
    return sorted(chosen)


def extractive_summary(text: str, title: str = "", max_sentences: int = 2,
                       max_chars: int = 400) -> str:
    """Summarize ``text`` by picking its most central sentences.

    Parameters
    ----------
    text:
        The text to summarize (a chunk or a section body).
    title:
        Section title; sentences sharing its words are preferred.
    max_sentences:
        Most sentences kept.
    max_chars:
        Length limit of the result, whitespace collapsed; a longer selection is cut at a word
        boundary and ends with ``"..."``.

    Returns
    -------
    str
        Chosen sentences in their original order, joined by a space. A text that already fits
        (at most ``max_sentences`` sentences and ``max_chars`` characters) is returned with only
        its whitespace collapsed.

    Notes
    -----
    ``score = centrality + 0.5 * title_overlap + 0.15 * (1 - i / n)``, where centrality is the
    sum, over the sentence's distinct content words, of the number of sentences containing them,
    divided by the square root of their count and scaled so the best sentence has 1; title overlap is the share of the title's content words found in
    the sentence. Sentences with fewer than three content words (headings, fragments) are
    only used when no other sentence exists.
    """
    return _extractive_summary(text, title, max_sentences, max_chars)


@lru_cache(maxsize=_MEMO_SIZE)
def _extractive_summary(text: str, title: str, max_sentences: int, max_chars: int) -> str:
    collapsed = _collapse(text)
    if not collapsed or max_sentences <= 0:
        return ""
    sentences = _sentences(text)
    if len(sentences) <= max_sentences and len(collapsed) <= max_chars:
        return collapsed
    chosen = _select(sentences, _rank(sentences, title), max_sentences, max_chars)
    return trim_to(" ".join(sentences[i] for i in chosen), max_chars)


def directory_summary(title: str, child_summaries: Sequence[tuple[str, str]],
                      own_summary: str = "", max_chars: int = 600) -> str:
    """Summary of a directory node built bottom-up from its children.

    Parameters
    ----------
    title:
        Title of the directory (folder, document or heading).
    child_summaries:
        ``(child title, child summary)`` pairs in document order.
    own_summary:
        Summary of the directory's own text (text directly under a heading), if any.
    max_chars:
        Length limit of the result.

    Returns
    -------
    str
        ``"<own summary> Covers: A; B; C. <central child sentences>"`` within ``max_chars``: the
        own summary (at most half the budget), the distinct child titles (cut with ``"..."`` when
        they do not fit), then up to three child-summary sentences most central across all children
        (same scoring as ``extractive_summary``, with ``title``) in child order while they fit.
        Deterministic given the input order. Without children, the trimmed own summary.
    """
    return _directory_summary(title, tuple((t, s) for t, s in child_summaries), own_summary, max_chars)


@lru_cache(maxsize=_MEMO_SIZE)
def _directory_summary(title: str, child_summaries: tuple[tuple[str, str], ...], own_summary: str,
                       max_chars: int) -> str:
    if max_chars <= 0:
        return ""
    own = _collapse(own_summary)
    children = [(_collapse(t), _collapse(s)) for t, s in child_summaries]
    if not children:
        return trim_to(own, max_chars)

    parts: list[str] = []
    used = 0
    if own:
        own = trim_to(own, max(max_chars // 2, min(len(own), max_chars - 40)))
        parts.append(own)
        used = len(own)

    titles: list[str] = []
    seen: set[str] = set()
    for t, _ in children:
        if t and t.casefold() not in seen:
            seen.add(t.casefold())
            titles.append(t)
    if titles:
        remaining = max_chars - used - (1 if parts else 0)
        covers = "Covers: " + "; ".join(titles) + "."
        if len(covers) > remaining:
            covers = trim_to("Covers: " + "; ".join(titles), remaining)
        if len(covers) > len("Covers: ") + len(_ELLIPSIS):
            parts.append(covers)
            used += len(covers) + (1 if used else 0)

    own_sentences = set(_sentences(own)) if own else set()
    pool: list[str] = []
    for _, s in children:
        for sent in _sentences(s):
            if sent not in own_sentences and sent not in pool:
                pool.append(sent)
    remaining = max_chars - used - (1 if used else 0)
    if pool and remaining > 20:
        order = _rank(pool, title)
        chosen = []
        budget = remaining
        for i in order:
            if len(chosen) >= _MAX_CHILD_SENTENCES:
                break
            extra = len(pool[i]) + (1 if chosen else 0)
            if extra <= budget:
                chosen.append(i)
                budget -= extra
        if chosen:
            parts.append(" ".join(pool[i] for i in sorted(chosen)))
    return trim_to(" ".join(parts), max_chars)
