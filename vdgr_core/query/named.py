"""Units the question names come first within their document.

A reference page holds hundreds of entries under one heading, and the entries next to the one
a question asks about share its words (``max-stale-ttl``, ``stale-answer-enable`` and
``stale-answer-ttl`` for "what TTL do stale answers get"). Retrieval finds the right document;
this step makes the entry the question *names* its first section:

- an **identifier** of the question (``tune.bufsize``, ``--autosquash``, ``AUTO_CD``,
  ``max-cache-size``: a word with ``_ . : / -`` inside, an option flag, a name in capitals with
  an underscore) that is a whole term of the section's title; or
- a title that is a compound term (parts joined by ``- _ . :`` or written in camelCase:
  ``stale-answer-ttl`` is stale, answer, ttl; ``maxSessions`` is max, sessions; placeholders
  such as ``<delay>`` left out) every part of which the question holds (light-stemmed). A
  heading of words ("Lists of Commands", "Exit Status") names no unit: a question uses such
  words in other senses.

Only the order *within* a document changes: each document keeps the places it held in the list,
and its named sections take the first of them, in their order; the others follow in theirs.
Nothing moves across documents, so a document ranked first stays first.
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

from vdgr_core.query.fusion import SectionHit
from vdgr_core.stopwords import STOP_WORDS
from vdgr_core.tokens import stem

_IDENTIFIER = re.compile(r"(?<![\w-])(?:--?[A-Za-z0-9][\w.-]*|[A-Za-z_$%][\w$]*(?:[._:/-][\w$]+)+|"
                         r"[A-Z][A-Z0-9]*_[A-Z0-9_]+)")
_PLACEHOLDER = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}|\([^()]*\)")
_PIECE = re.compile(r"[A-Za-z0-9]+")
_ALTERNATIVES = re.compile(r"\s*[,;|]\s+")
# a term made of parts: joined by "-_.:" or written in camelCase (a heading of words is no term)
_COMPOUND = re.compile(r"[A-Za-z0-9]+(?:[-_.:][A-Za-z0-9]+)+|[a-z]+(?:[A-Z][a-z0-9]+)+|(?:[A-Z][a-z0-9]+){2,}")
_PIECE_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SHORT_FLAG = re.compile(r"[-+][A-Za-z]")
_TERM_SPLIT = re.compile(r"[\s,;|()=<>\[\]{}\"'`]+")


def _fold(term: str) -> str:
    """``term`` lower-cased, except a one-letter option flag: ``-d`` and ``-D`` are two options."""
    return term if _SHORT_FLAG.fullmatch(term) else term.casefold()


def identifiers(question: str) -> frozenset[str]:
    """The identifiers a question writes, lower-cased but for one-letter flags (trailing
    ``.,:;?`` removed).

    Examples
    --------
    >>> sorted(identifiers("What does tune.bufsize or --autosquash do? Is AUTO_CD on? And -D?"))
    ['--autosquash', '-D', 'auto_cd', 'tune.bufsize']
    """
    return frozenset(_fold(m.group(0).rstrip(".,:;?!")) for m in _IDENTIFIER.finditer(question))


def _pieces(text: str) -> frozenset[str]:
    words = (w.casefold() for chunk in _PIECE.findall(text) for w in _PIECE_SPLIT.split(chunk))
    return frozenset(stem(w) for w in words if w not in STOP_WORDS)


def names(question: str, title: str, ids: frozenset[str] = None, words: frozenset[str] = None) -> bool:
    """Whether ``question`` names the section titled ``title`` (see the module docstring).

    Examples
    --------
    >>> names("What TTL is put on stale answers by default?", "stale-answer-ttl")
    True
    >>> names("What TTL is put on stale answers by default?", "max-stale-ttl")
    False
    >>> names("How do I set tune.bufsize?", "tune.bufsize <number>")
    True
    >>> names("What does mapfile's -d option do?", "-D"), names("What does -d do?", "-d delim")
    (False, True)
    """
    ids = identifiers(question) if ids is None else ids
    words = _pieces(question) if words is None else words
    for alternative in _ALTERNATIVES.split(title):
        terms = {_fold(t.rstrip(".,:;")) for t in _TERM_SPLIT.split(alternative) if t}
        if ids & terms:
            return True
        term = _PLACEHOLDER.sub(" ", alternative).split()
        if len(term) == 1 and _COMPOUND.fullmatch(term[0]):
            pieces = _pieces(term[0])
            if len(pieces) >= 2 and pieces <= words:
                return True
    return False


def named_first(question: str, hits: Sequence[SectionHit], doc_of, title_of: Callable[[SectionHit], str]) -> list[SectionHit]:
    """``hits`` with each document's named sections first among the places it holds.

    Parameters
    ----------
    question : str
    hits : sequence of SectionHit
        Best first.
    doc_of : indexable
        Section -> document number (``IndexView.sections.doc``).
    title_of : callable
        The title of a hit's section.
    """
    ids, words = identifiers(question), _pieces(question)
    docs = [int(doc_of[h.section]) for h in hits]
    named = [names(question, title_of(h), ids, words) for h in hits]
    if not any(named):
        return list(hits)
    order: dict[int, list[int]] = {}
    for i, d in enumerate(docs):
        order.setdefault(d, []).append(i)
    out = list(hits)
    for places in order.values():
        ranked = sorted(places, key=lambda i: (not named[i], i))
        for place, i in zip(places, ranked):
            out[place] = hits[i]
    return out
