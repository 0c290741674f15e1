"""Recording a query's timings, steps and LLM usage, and rendering it as text (``--explain``)."""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Iterator, Optional

from vdgr_core.query.result import QueryResult, Trace, TraceStep


class TraceRecorder:
    """Collects per-stage wall time (summed when a stage repeats), steps and LLM usage.

    Parameters
    ----------
    llm : LLMClient or None
        When given, ``finish`` reports the calls and tokens spent since construction.
        Queries of one knowledge base run one at a time, so the difference is this query's.
    """

    def __init__(self, llm: Optional[Any] = None):
        self._llm = llm
        self._t0 = time.perf_counter()
        self._calls0, self._tokens0 = self._usage()
        self.timings: dict[str, float] = {}
        self.steps: list[TraceStep] = []

    def _usage(self) -> tuple[int, int]:
        if self._llm is None:
            return 0, 0
        usage = self._llm.usage()
        calls = sum(u.calls for u in usage.values())
        tokens = sum(u.prompt_tokens + u.completion_tokens for u in usage.values())
        return calls, tokens

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block under ``name`` (milliseconds, accumulated)."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + (time.perf_counter() - t) * 1000.0

    def step(self, stage: str, message: str, **data: Any) -> None:
        """Record a decision."""
        self.steps.append(TraceStep(stage=stage, message=message, data=data))

    def finish(self) -> Trace:
        """The trace; ``timings_ms.total`` is the wall time since construction."""
        calls, tokens = self._usage()
        timings = {k: round(v, 3) for k, v in self.timings.items()}
        timings["total"] = round((time.perf_counter() - self._t0) * 1000.0, 3)
        return Trace(llm_calls=calls - self._calls0, tokens=tokens - self._tokens0,
                     timings_ms=timings, steps=list(self.steps))


def render_text(result: QueryResult, *, explain: bool = False) -> str:
    """Human-readable rendering: answer, numbered citations, routing (and the trace if asked)."""
    lines = [result.answer.strip() or "(no answer)", ""]
    if result.evidence:
        lines.append("Sources:")
        for n, ev in enumerate(result.evidence, 1):
            where = f"{ev.source}, v{ev.version}" if ev.version else ev.source     # unversioned: no bare "v"
            lines.append(f"  [{n}] {' > '.join(ev.path)}  ({where}) "
                         f"score={ev.score:.4f} routes={','.join(ev.routes)}")
    routing = ", ".join(f"{r.domain} ({r.confidence:.2f})" for r in result.routing)
    lines.append(f"Routing: {routing or '-'}")
    if explain:
        t = result.trace
        lines.append("")
        lines.append(f"Trace: llm_calls={t.llm_calls} tokens={t.tokens}")
        lines.append("Timings (ms): " + ", ".join(f"{k}={v:.1f}" for k, v in sorted(t.timings_ms.items())))
        for s in t.steps:
            data = " ".join(f"{k}={v}" for k, v in s.data.items())
            lines.append(f"  - [{s.stage}] {s.message}" + (f"  ({data})" if data else ""))
    return "\n".join(lines)


class StepLog:
    """Adds steps to a finished :class:`Trace` (an answer streamed after retrieval)."""

    def __init__(self, trace: Trace):
        self._trace = trace

    def step(self, stage: str, message: str, **data: Any) -> None:
        """Record a decision."""
        self._trace.steps.append(TraceStep(stage=stage, message=message, data=data))
