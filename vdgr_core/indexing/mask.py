"""Credential masking of one document, before anything is derived from its text.

Two passes, both with :func:`vdgr_core.safety.secrets.mask_secrets`:

1. the decoded text, line by line, before parsing: findings carry the line of the document;
2. the parsed document (title, every section's title, heading path and text, string metadata):
   what only appears once the markup is decoded (an HTML entity, ``**password**: x``) is
   masked there, its line looked up in the raw text (0 when it is not there verbatim).

Chunks, summaries, entities, BM25 shards, vectors, directory nodes and dead-letter details are
all made from the masked document, so the original never reaches a table, shard or cache.
"""
from __future__ import annotations

import dataclasses

from schemas.records import ParsedDocument
from vdgr_core.safety.secrets import MaskedText, SecretFinding, mask_secrets, may_hold_secrets


def mask_raw(text: str, markup: bool = False) -> MaskedText:
    """Pass 1: the decoded document text with credentials masked, findings with their lines
    (``markup``: the text is raw HTML, where a value ends at the next tag)."""
    return mask_secrets(text, markup=markup)


def _text_fields(parsed: ParsedDocument):
    """Every string of ``parsed`` that pass 2 masks."""
    yield parsed.title
    for s in parsed.sections:
        yield s.title
        yield s.text
        yield from s.heading_path

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, tuple):
            for v in value:
                yield from strings(v)

    for _, value in parsed.metadata:
        yield from strings(value)


def mask_parsed(parsed: ParsedDocument, raw_text: str) -> tuple[ParsedDocument, tuple[SecretFinding, ...]]:
    """Pass 2: ``parsed`` with credentials masked in every text field; the findings of this pass.

    All the fields are first tested together, joined by line breaks (:func:`may_hold_secrets`):
    most documents are cleared by one scan instead of one per title, heading and section.
    """
    if not may_hold_secrets("\n".join(_text_fields(parsed))):
        return parsed, ()
    found: list[SecretFinding] = []
    cache: dict[str, str] = {}

    def clean(value: str) -> str:
        if not value:
            return value
        hit = cache.get(value)
        if hit is None:
            m = mask_secrets(value, lines_in=raw_text)
            found.extend(m.findings)
            hit = cache[value] = m.text
        return hit

    def clean_meta(value):
        if isinstance(value, str):
            return clean(value)
        if isinstance(value, tuple):
            return tuple(clean_meta(v) for v in value)
        return value

    sections = tuple(dataclasses.replace(s, title=clean(s.title), text=clean(s.text),
                                         heading_path=tuple(clean(h) for h in s.heading_path))
                     for s in parsed.sections)
    masked = ParsedDocument(title=clean(parsed.title), sections=sections,
                            metadata=tuple((k, clean_meta(v)) for k, v in parsed.metadata))
    if not found:
        return parsed, ()
    return masked, tuple(found)
