"""The query result: pydantic models matching the JSON contract of DESIGN.md."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field


class DomainScore(BaseModel):
    """One routed domain and the router's confidence in [0, 1]."""

    domain: str
    confidence: float = Field(ge=0.0, le=1.0)
    # the collection the question names, when routing found one (DCD "section <collection>")
    collection: Optional[str] = None


class Evidence(BaseModel):
    """One retrieved chunk; ``routes`` lists every route that found it."""

    chunk_id: str
    domain: str
    version: str
    source: str
    path: list[str]
    title: str
    text: str
    score: float
    routes: list[str]
    page: Optional[int] = None     # 1-based page where the chunk starts (PDF); None otherwise


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


class QueryResult(BaseModel):
    """The answer to one question (evidence best first, at most k items)."""

    id: str
    question: str
    answer: str
    routing: list[DomainScore]
    evidence: list[Evidence]
    trace: Trace
