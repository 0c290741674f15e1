"""Pluggable re-rankers of route 1's sections: none, offline section re-scoring, a local
cross-encoder, or an LLM.

A re-ranker reads each candidate section's passage (its matched chunks merged, see
:mod:`vdgr_core.query.passage`) and returns the sections reordered with its own scores.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Protocol, Sequence

from schemas.config import RerankerConfig
from schemas.errors import ConfigError, LLMError
from vdgr_core.query.constrained import scores_model
from vdgr_core.query.view import IndexView
from vdgr_core.query.fusion import SectionHit
from vdgr_core.query.passage import section_passage
from vdgr_core.query.textutil import overlap, terms


class Reranker(Protocol):
    """Reorders candidate sections for a question."""

    name: str

    def rerank(self, question: str, hits: Sequence[SectionHit], data: IndexView) -> list[SectionHit]:
        """Return the sections best first with the re-ranker's scores; each input once."""


def _reordered(hits: Sequence[SectionHit], scores: Sequence[float], data: IndexView) -> list[SectionHit]:
    order = sorted(range(len(hits)), key=lambda i: (-scores[i], int(data.sections.id_rank[hits[i].section])))
    return [replace(hits[i], score=float(scores[i])) for i in order]


def _passages(hits: Sequence[SectionHit], data: IndexView) -> list[str]:
    return [section_passage(data, h.section, h.rows).text for h in hits]


class NoReranker:
    """Keeps the fused order and scores."""

    name = "none"

    def rerank(self, question, hits, data):
        return list(hits)


class SectionRescorer:
    """Offline section-level re-scoring: no model, no LLM.

    Chunks match precisely but a question's words are often spread over a section's chunks and
    its headings. Each candidate is scored by the share of the question's content words that
    its whole section holds (every chunk's text and the section's heading path), and that order
    is fused with the incoming one by reciprocal rank (``rrf_k``), so a section that covers the
    question moves up without the fused order being thrown away.
    """

    name = "section"

    def __init__(self, rrf_k: int = 60):
        self._rrf_k = rrf_k

    def rerank(self, question, hits, data):
        hits = list(hits)
        if not hits:
            return []
        q = terms(question)
        c = data.contents
        cover = []
        for h in hits:
            rows = data.sections.rows[h.section]
            head = " ".join(c.path[int(rows[0])]) if len(rows) else ""
            cover.append(overlap(q, head + "\n" + "\n".join(c.text.take(rows))))
        by_cover = sorted(range(len(hits)), key=lambda i: (-cover[i], i))
        lex_rank = {i: r for r, i in enumerate(by_cover)}
        scores = [1.0 / (self._rrf_k + i + 1) + 1.0 / (self._rrf_k + lex_rank[i] + 1) for i in range(len(hits))]
        return _reordered(hits, scores, data)


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder loaded from a local folder, on first use.

    Parameters
    ----------
    model_path : str
        A local model folder; nothing is downloaded.
    """

    name = "cross_encoder"

    def __init__(self, model_path: str):
        self._path = model_path
        self._model = None

    def _load(self):
        if self._model is None:
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise ConfigError("reranker 'cross_encoder' needs sentence-transformers installed") from exc
            self._model = CrossEncoder(self._path, local_files_only=True)
        return self._model

    def rerank(self, question, hits, data):
        hits = list(hits)
        if not hits:
            return []
        pairs = [(question, text) for text in _passages(hits, data)]
        return _reordered(hits, [float(s) for s in self._load().predict(pairs)], data)


class LLMReranker:
    """Scores candidates 0-10 with one structured LLM call; on failure keeps the input order."""

    name = "llm"

    def __init__(self, llm):
        self._llm = llm
        self.last_error: Optional[str] = None

    def rerank(self, question, hits, data):
        from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

        hits = list(hits)
        self.last_error = None
        if not hits:
            return []
        labels = [f"C{i + 1}" for i in range(len(hits))]
        blocks = "\n".join(f"{lab}:\n{wrap_untrusted(text[:1500], 'PASSAGE')}"
                           for lab, text in zip(labels, _passages(hits, data)))
        system = ("Score how well each passage answers the question, 0 (useless) to 10 (answers it). "
                  "Return JSON with a score for every passage label. " + UNTRUSTED_NOTICE)
        user = f"Question:\n{wrap_untrusted(question, 'QUESTION')}\n\nPassages:\n{blocks}"
        model = scores_model("RerankScores", labels)
        try:
            reply = self._llm.structured("rerank", [{"role": "system", "content": system},
                                                    {"role": "user", "content": user}], model)
        except LLMError as exc:
            self.last_error = str(exc)[:200]
            return hits
        got = {item.label: item.score for item in reply.scores}
        scored = sorted(range(len(hits)), key=lambda i: (-got.get(labels[i], -1.0), i))
        return [replace(hits[i], score=float(got.get(labels[i], -1.0))) for i in scored]


def make_reranker(config: RerankerConfig, llm=None) -> Reranker:
    """The re-ranker ``config.kind`` names (``llm`` needs an LLM client)."""
    if config.kind == "none":
        return NoReranker()
    if config.kind == "section":
        return SectionRescorer()
    if config.kind == "cross_encoder":
        return CrossEncoderReranker(config.model_path or "")
    if llm is None:
        raise ConfigError("reranker 'llm' needs an LLM configured (QueryConfig.llm)")
    return LLMReranker(llm)
