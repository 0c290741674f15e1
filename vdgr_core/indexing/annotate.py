"""Per-chunk annotation: a summary and the technical terms, offline or with one LLM call.

With ``title_entities`` (the default build setting) the terms of the chunk that opens a section
(:func:`section_heads`) start with the terms of the section's title
(:func:`vdgr_core.entities.title_terms`), then the terms of its text, at most ``max_terms`` in all.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

from schemas.config import AnnotateSettings
from schemas.records import Chunk, Term
from vdgr_core.cooccurrence import mention_statistics
from vdgr_core.entities import extract_terms, normalize_term, title_terms
from vdgr_core.summarize import extractive_summary


@dataclass(frozen=True)
class EntityMention:
    """One entity as seen in one chunk (the unit the entity merge combines)."""

    domain: str
    norm: str
    name: str
    kind: str
    score: float
    mentions: int
    chunk_id: str
    doc_id: str


@dataclass(frozen=True)
class AnnotatedChunk:
    chunk: Chunk                                    # with summary and entities filled in
    mentions: tuple[EntityMention, ...]
    pairs: tuple[tuple[str, str, int], ...]         # (norm_a, norm_b, sentences), a < b


def annotate_offline(chunk: Chunk, *, max_terms: int, summary_sentences: int,
                     summary_max_chars: int, title_entities: bool = True) -> AnnotatedChunk:
    """Extractive summary + statistical technical terms (the title's first when
    ``title_entities``) + sentence co-occurrence."""
    summary, terms = _offline_text_annotation(chunk.text, chunk.title, max_terms, summary_sentences,
                                              summary_max_chars, title_entities)
    return _finish(chunk, summary, terms)


def section_heads(chunks: Sequence[Chunk]) -> frozenset[str]:
    """Ids of the chunks that open their section: the first of each ``parent_id`` in order.

    Only these get the title's entities: the heading stands before the section's first chunk,
    and one edge per section is enough to reach it (evidence is per section), where an edge
    from every chunk of a long section would let the walk's mass circle inside that section.
    """
    seen: set[str] = set()
    heads = []
    for c in chunks:
        if c.parent_id not in seen:
            seen.add(c.parent_id)
            heads.append(c.chunk_id)
    return frozenset(heads)


def with_title_terms(title: str, terms: Sequence[Term], max_terms: int) -> list[Term]:
    """The title's terms, then ``terms`` not among them, at most ``max_terms``."""
    head = title_terms(title)
    seen = {t.norm for t in head}
    return (head + [t for t in terms if t.norm not in seen])[:max_terms]


# A chunk's annotation depends only on its text and title (and the settings), and corpora of
# product manuals repeat most of their text across versions and models (the EManual corpus:
# 2,421 distinct (text, title) pairs among 10,537 chunks). The text-level parts are memoized per
# process; results are the same with or without these caches.
_MEMO_SIZE = 8192


@lru_cache(maxsize=_MEMO_SIZE)
def _offline_text_annotation(text: str, title: str, max_terms: int, summary_sentences: int,
                             summary_max_chars: int, title_entities: bool) -> tuple[str, tuple[Term, ...]]:
    summary = extractive_summary(text, title, summary_sentences, summary_max_chars)
    terms = extract_terms(text, max_terms=max_terms)
    if title_entities:
        terms = with_title_terms(title, terms, max_terms)
    return summary, tuple(terms)


@lru_cache(maxsize=_MEMO_SIZE)
def _text_statistics(text: str, norms: tuple[str, ...]):
    """Mention counts and co-occurring pairs ``(a, b, sentences)`` of ``norms`` in ``text``.

    Cached: callers must not modify the returned dict.
    """
    counts, cooccurring = mention_statistics(text, norms)
    return counts, tuple(sorted((a, b, c) for (a, b), c in cooccurring.items() if c > 0))


def annotate_with_llm(chunk: Chunk, client, *, max_terms: int, title_entities: bool = True) -> AnnotatedChunk:
    """One structured LLM call returns both the summary and the entities with importance
    (after the title's terms when ``title_entities``)."""
    from vdgr_core.llm.indexing_tasks import annotate_chunk

    ann = annotate_chunk(client, chunk.title, chunk.text)
    terms = []
    seen = set()
    for e in ann.entities:
        norm = normalize_term(e.name)
        if not norm or norm in seen:
            continue
        seen.add(norm)
        terms.append(Term(name=e.name.strip(), norm=norm, kind="llm",
                          score=float(min(1.0, max(0.0, e.importance)))))
    terms.sort(key=lambda t: (-t.score, t.norm))
    terms = with_title_terms(chunk.title, terms, max_terms) if title_entities else terms[:max_terms]
    return _finish(chunk, ann.summary.strip(), terms)


def _finish(chunk: Chunk, summary: str, terms: Sequence[Term]) -> AnnotatedChunk:
    counts, pairs = _text_statistics(chunk.text, tuple(t.norm for t in terms))
    by_norm = {t.norm: t for t in terms}
    mentions = tuple(
        EntityMention(chunk.domain, n, by_norm[n].name, by_norm[n].kind, by_norm[n].score,
                      max(1, counts.get(n, 0)), chunk.chunk_id, chunk.doc_id)
        for n in sorted(by_norm)
    )
    annotated = dataclasses.replace(chunk, summary=summary, entities=tuple(sorted(by_norm)))
    return AnnotatedChunk(annotated, mentions, pairs)


def annotation_from_terms(chunk: Chunk, terms: list[Term]) -> AnnotatedChunk:
    """The annotation of a chunk whose summary (``chunk.summary``) and terms are already known.

    Mention counts and co-occurring pairs depend only on the text and the terms, so an update
    re-derives them for stored chunks (no term extraction, no LLM call).
    """
    return _finish(chunk, chunk.summary, list(terms))


def annotate(chunk: Chunk, client: Optional[object], *, max_terms: int, summary_sentences: int,
             summary_max_chars: int, title_entities: bool = True) -> AnnotatedChunk:
    """Annotate with the LLM when a client is given, offline otherwise.

    Raises
    ------
    schemas.errors.LLMError
        When the LLM fails for this chunk (see :func:`annotate_or_fall_back`).
    """
    if client is None:
        return annotate_offline(chunk, max_terms=max_terms, summary_sentences=summary_sentences,
                                summary_max_chars=summary_max_chars, title_entities=title_entities)
    return annotate_with_llm(chunk, client, max_terms=max_terms, title_entities=title_entities)


@dataclass(frozen=True)
class AnnotationOutcome:
    annotated: AnnotatedChunk
    fallback_reason: Optional[str] = None   # set when the LLM failed and the offline path was used


def annotate_or_fall_back(chunk: Chunk, client: Optional[object], *, max_terms: int,
                          summary_sentences: int, summary_max_chars: int,
                          title_entities: bool = True) -> AnnotationOutcome:
    """Like :func:`annotate`, but a permanent LLM failure falls back to the offline annotation.

    The caller must count ``fallback_reason`` (the build reports it as ``llm_fallbacks``): the
    chunk is indexed, but not with the annotation that was asked for. Nothing about the failure
    is cached, so the next full build asks the LLM again.
    """
    from schemas.errors import LLMError

    try:
        return AnnotationOutcome(annotate(chunk, client, max_terms=max_terms,
                                          summary_sentences=summary_sentences,
                                          summary_max_chars=summary_max_chars,
                                          title_entities=title_entities))
    except LLMError as exc:
        offline = annotate_offline(chunk, max_terms=max_terms, summary_sentences=summary_sentences,
                                   summary_max_chars=summary_max_chars, title_entities=title_entities)
        return AnnotationOutcome(offline, str(exc) or type(exc).__name__)


@dataclass(frozen=True)
class AnnotatedChunks:
    """A run of chunks annotated: each one's annotation, and the chunks whose LLM call failed
    for good with the reason (annotated offline instead)."""

    annotated: tuple[AnnotatedChunk, ...]
    fallbacks: tuple[tuple[Chunk, str], ...]


def annotate_chunks(chunks: Sequence[Chunk], client: Optional[object], settings: AnnotateSettings) -> AnnotatedChunks:
    """Annotate ``chunks`` (one document's, or several documents' in order) with ``client``
    (None: offline), falling back to the offline annotation where the LLM fails for good; the
    first chunk of each section gets its title's terms first when ``settings.title_entities``.
    The one annotation loop of the build's workers and the update's driver."""
    heads = section_heads(chunks)
    annotated, fallbacks = [], []
    for chunk in chunks:
        outcome = annotate_or_fall_back(chunk, client, max_terms=settings.max_terms,
                                        summary_sentences=settings.summary_sentences,
                                        summary_max_chars=settings.summary_max_chars,
                                        title_entities=settings.title_entities and chunk.chunk_id in heads)
        if outcome.fallback_reason is not None:
            fallbacks.append((chunk, outcome.fallback_reason))
        annotated.append(outcome.annotated)
    return AnnotatedChunks(tuple(annotated), tuple(fallbacks))
