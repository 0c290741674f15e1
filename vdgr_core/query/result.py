"""The query result: pydantic models matching the JSON contract of DESIGN.md."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field


class DomainScore(BaseModel):
    """One routed domain and the router's confidence in [0, 1]."""

    domain: str
    confidence: float = Field(ge=0.0, le=1.0)
    # the collection the LLM router chose inside the domain (DCD), when it chose one
    collection: Optional[str] = None


class Evidence(BaseModel):
    """One retrieved section: its matched passage (the matched chunks merged in reading order,
    with a little context) under the section's path; ``routes`` lists every route that found it.

    ``chunk_id`` is the best matched chunk, ``chunk_ids`` every chunk the passage spans, and
    ``section_id`` the section's directory node.
    """

    chunk_id: str
    domain: str
    version: str
    source: str
    path: list[str]
    title: str
    text: str
    score: float
    routes: list[str]
    section_id: str = ""
    chunk_ids: list[str] = Field(default_factory=list)
    page: Optional[int] = None     # 1-based page where the best matched chunk starts (PDF); None otherwise
    doc_id: str = ""               # the source document's id (documents table; GET /v1/documents/{id})


class TraceStep(BaseModel):
    """One decision of the query: a stage name, a readable message and its data."""

    stage: str
    message: str
    data: dict[str, Any] = Field(default_factory=dict)


class Trace(BaseModel):
    """LLM usage, per-stage wall times (ms, ``total`` = whole query) and the steps taken."""

    llm_calls: int = 0
    tokens: int = 0
    timings_ms: dict[str, float] = Field(default_factory=dict)
    steps: list[TraceStep] = Field(default_factory=list)


class Citation(BaseModel):
    """One citation of the answer: ``answer[start:end]`` (``[n]``) cites ``evidence[n - 1]``."""

    start: int
    end: int
    evidence: int           # 1-based, as written in the answer


class QueryResult(BaseModel):
    """The answer to one question (evidence best first, at most k items).

    ``citations`` are the answer stage's own: every ``[n]`` of the answer that cites an
    evidence item of this result, with its offsets (brackets in retrieved text are neutralised
    before an answer is made, so none comes from a document). A client renders links from
    them, never by looking for brackets in the text.
    """

    id: str
    question: str
    answer: str
    routing: list[DomainScore]
    evidence: list[Evidence]
    trace: Trace
    citations: list[Citation] = Field(default_factory=list)
