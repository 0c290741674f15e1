"""Indexing-side LLM calls: chunk annotation and bottom-up directory summaries.

Each function is one structured call through :class:`~vdgr_core.llm.client.LLMClient`; the
document text always travels inside :func:`~vdgr_core.llm.untrusted.wrap_untrusted` blocks.
These are the LLM upgrades of the offline defaults (extractive summary, statistical term
extractor); callers fall back to those on :class:`~schemas.errors.LLMError`.
"""
from __future__ import annotations

from typing import Sequence

from pydantic import BaseModel, Field

from vdgr_core.llm.client import LLMClient
from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

STAGE_ANNOTATE = "annotate_chunk"
STAGE_DIRECTORY = "summarize_directory"


class AnnotatedEntity(BaseModel):
    """A technical term found in a chunk, with how central it is to the chunk (0..1)."""

    name: str = Field(min_length=1, max_length=200)
    importance: float = Field(ge=0.0, le=1.0)


class ChunkAnnotation(BaseModel):
    """Summary and entities of one chunk, produced by one call."""

    summary: str
    entities: list[AnnotatedEntity]


class DirectorySummary(BaseModel):
    """Summary of a directory made from its children's summaries."""

    summary: str


_ANNOTATE_SYSTEM = (
    "You annotate sections of technical documentation for a retrieval index. "
    "Write a factual summary of the section in at most {sentences} sentence(s), and list the "
    "technical terms it contains (product names, components, settings, commands, error codes, "
    "protocols, standards), at most {max_entities}, each with an importance between 0 and 1 "
    "saying how central it is to the section. Use the terms as written in the text. "
    "Answer with JSON only. " + UNTRUSTED_NOTICE
)

_DIRECTORY_SYSTEM = (
    "You write the summary of one directory of technical documentation from the summaries of "
    "its children (sub-directories and sections). In at most {sentences} sentence(s), say what "
    "the directory covers so that a reader can decide whether to look inside. "
    "Answer with JSON only. " + UNTRUSTED_NOTICE
)


def _clean_entities(entities: Sequence[AnnotatedEntity], limit: int) -> list[AnnotatedEntity]:
    """Strip names, merge case-insensitive duplicates (keep highest importance), rank, cut."""
    best: dict[str, AnnotatedEntity] = {}
    for ent in entities:
        name = " ".join(ent.name.split())
        if not name:
            continue
        key = name.casefold()
        if key not in best or ent.importance > best[key].importance:
            best[key] = AnnotatedEntity(name=name, importance=ent.importance)
    ranked = sorted(best.values(), key=lambda e: (-e.importance, e.name.casefold()))
    return ranked[:limit]


def annotation_messages(title: str, text: str, *, sentences: int = 2, max_entities: int = 24) -> list[dict]:
    """The chat messages of :func:`annotate_chunk` (exposed for batching and tests)."""
    doc = wrap_untrusted(f"Section title: {title}\n\n{text}", label="DOCUMENT")
    return [
        {"role": "system", "content": _ANNOTATE_SYSTEM.format(sentences=sentences, max_entities=max_entities)},
        {"role": "user", "content": f"Annotate this section.\n\n{doc}"},
    ]


def annotate_chunk(
    client: LLMClient, title: str, text: str, *, sentences: int = 2, max_entities: int = 24
) -> ChunkAnnotation:
    """Summarize a chunk and extract its entities in one structured call.

    Parameters
    ----------
    client : LLMClient
    title : str
        Title of the section the chunk sits under.
    text : str
        The chunk text (untrusted).
    sentences : int, optional
        Summary length budget, in sentences.
    max_entities : int, optional
        At most this many entities are kept (highest importance first).

    Returns
    -------
    ChunkAnnotation
        Summary stripped; entity names whitespace-normalized and deduplicated
        case-insensitively, sorted by importance.

    Raises
    ------
    schemas.errors.LLMError
        When the endpoint fails or never answers in contract.
    """
    msgs = annotation_messages(title, text, sentences=sentences, max_entities=max_entities)
    ann = client.structured(STAGE_ANNOTATE, msgs, ChunkAnnotation)
    return ChunkAnnotation(summary=ann.summary.strip(), entities=_clean_entities(ann.entities, max_entities))


def directory_messages(title: str, children: Sequence[tuple[str, str]], *, sentences: int = 2) -> list[dict]:
    """The chat messages of :func:`summarize_directory`."""
    blocks = "\n".join(
        wrap_untrusted(f"Title: {child_title}\nSummary: {child_summary}", label="CHILD")
        for child_title, child_summary in children
    )
    head = wrap_untrusted(title, label="DIRECTORY_TITLE")
    return [
        {"role": "system", "content": _DIRECTORY_SYSTEM.format(sentences=sentences)},
        {"role": "user", "content": f"Directory:\n{head}\n\nIts children:\n{blocks}"},
    ]


def summarize_directory(
    client: LLMClient, title: str, children: Sequence[tuple[str, str]], *, sentences: int = 2
) -> str:
    """Summarize a directory from its children's ``(title, summary)`` pairs.

    Parameters
    ----------
    client : LLMClient
    title : str
        The directory's title.
    children : sequence of (str, str)
        ``(title, summary)`` of each child directory or content node.
    sentences : int, optional
        Summary length budget, in sentences.

    Returns
    -------
    str
        The summary, stripped. A directory without children gets ``""`` and no call is made.

    Raises
    ------
    schemas.errors.LLMError
        When the endpoint fails or never answers in contract.
    """
    if not children:
        return ""
    msgs = directory_messages(title, children, sentences=sentences)
    return client.structured(STAGE_DIRECTORY, msgs, DirectorySummary).summary.strip()
