"""Pluggable re-rankers for route 1: none, a local cross-encoder, or an LLM."""
from __future__ import annotations

from typing import Optional, Protocol, Sequence

from schemas.config import RerankerConfig
from schemas.errors import ConfigError, LLMError
from vdgr_core.query.constrained import scores_model
from vdgr_core.query.data import Contents


class Reranker(Protocol):
    """Reorders candidate content rows for a question."""

    name: str

    def rerank(self, question: str, rows: Sequence[int], contents: Contents) -> list[tuple[int, float]]:
        """Return (row, score) best first; every input row appears once."""


class NoReranker:
    """Keeps the fused order (score = 1 / rank)."""

    name = "none"

    def rerank(self, question, rows, contents):
        return [(r, 1.0 / (i + 1)) for i, r in enumerate(rows)]


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

    def rerank(self, question, rows, contents):
        rows = list(rows)
        if not rows:
            return []
        pairs = [(question, contents.text[r]) for r in rows]
        scores = [float(s) for s in self._load().predict(pairs)]
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], int(contents.id_rank[rows[i]])))
        return [(rows[i], scores[i]) for i in order]


class LLMReranker:
    """Scores candidates 0-10 with one structured LLM call; on failure keeps the input order."""

    name = "llm"

    def __init__(self, llm):
        self._llm = llm
        self.last_error: Optional[str] = None

    def rerank(self, question, rows, contents):
        from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

        rows = list(rows)
        self.last_error = None
        if not rows:
            return []
        labels = [f"C{i + 1}" for i in range(len(rows))]
        blocks = "\n".join(f"{lab}:\n{wrap_untrusted(contents.text[r][:1500], 'PASSAGE')}"
                           for lab, r in zip(labels, rows))
        system = ("Score how well each passage answers the question, 0 (useless) to 10 (answers it). "
                  "Return JSON with a score for every passage label. " + UNTRUSTED_NOTICE)
        user = f"Question:\n{wrap_untrusted(question, 'QUESTION')}\n\nPassages:\n{blocks}"
        model = scores_model("RerankScores", labels)
        try:
            reply = self._llm.structured("rerank", [{"role": "system", "content": system},
                                                    {"role": "user", "content": user}], model)
        except LLMError as exc:
            self.last_error = str(exc)[:200]
            return NoReranker().rerank(question, rows, contents)
        got = {item.label: item.score for item in reply.scores}
        scored = [(r, got.get(lab, -1.0), i) for i, (lab, r) in enumerate(zip(labels, rows))]
        scored.sort(key=lambda x: (-x[1], x[2]))
        return [(r, s) for r, s, _ in scored]


def make_reranker(config: RerankerConfig, llm=None) -> Reranker:
    """The re-ranker ``config.kind`` names (``llm`` needs an LLM client)."""
    if config.kind == "none":
        return NoReranker()
    if config.kind == "cross_encoder":
        return CrossEncoderReranker(config.model_path or "")
    if llm is None:
        raise ConfigError("reranker 'llm' needs an LLM configured (QueryConfig.llm)")
    return LLMReranker(llm)
