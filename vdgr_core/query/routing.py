"""Knowledge-base routing: rank the domains for a question, keep the relevant ones.

Offline, a domain's score combines (a) a product/domain-name match (exact token sequences win:
"Galaxy S10" names ``Galaxy_S10`` fully but ``Galaxy_S10e`` only partly), word overlap with its
description and top-level directory titles, (b) the best cosine similarity of the query vector
to its visible directory nodes and its share of the top BM25 scores. Scores become confidences
with a softmax; domains within ``routing_threshold`` of the best are kept (at most
``max_domains``). With an LLM, a DCD-style router picks a domain then a collection, each through
a response model whose label is constrained to the real names; any failure falls back to the
offline ranking.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from schemas.config import QueryConfig
from schemas.errors import LLMError
from vdgr_core.query.constrained import choice_model
from vdgr_core.query.data import IndexData, QueryScope
from vdgr_core.query.result import DomainScore
from vdgr_core.query.textutil import overlap, terms, tokens
from vdgr_core.query.trace import TraceRecorder

ALL_COLLECTIONS = "ALL"
_TEMPERATURE = 0.2
_W_NAME, _W_TEXT, _W_COS, _W_BM25 = 2.0, 0.5, 1.0, 0.5


@dataclass(frozen=True)
class RoutingDecision:
    """Domains to search (best first, with confidence) and an optional collection filter."""

    domains: list[DomainScore]
    collections: Optional[tuple[str, ...]] = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.domain for d in self.domains)


def name_match(question: str, name: str) -> float:
    """1.0 when the domain name's token sequence occurs contiguously in the question, else
    half the fraction of its tokens present (exact tokens: ``s10`` does not match ``s10e``)."""
    q = tokens(question)
    n = tokens(name.replace("_", " "))
    if not n or not q:
        return 0.0
    for i in range(len(q) - len(n) + 1):
        if q[i:i + len(n)] == n:
            return 1.0
    qs = set(q)
    return 0.5 * sum(1 for t in n if t in qs) / len(n)


def _softmax(scores: np.ndarray) -> np.ndarray:
    z = np.exp((scores - scores.max()) / _TEMPERATURE)
    return z / z.sum()


class Router:
    """Ranks the domains of an index for a question.

    Parameters
    ----------
    data : IndexData
    domain_infos : sequence of DomainInfo
        From the manifest.
    reader : IndexReader
        For the per-domain BM25 shards.
    config : QueryConfig
    llm : LLMClient, optional
    """

    def __init__(self, data: IndexData, domain_infos: Sequence, reader, config: QueryConfig, llm=None):
        self._data = data
        self._infos = {d.name: d for d in domain_infos}
        self._reader = reader
        self._config = config
        self._llm = llm
        dirs = data.directories
        roots = {i for i, pid in enumerate(dirs.parent_id) if dirs.index.get(pid or "") is None}
        self._top_level = sorted(c for r in roots for c in data.dir_children.get(r, ()))

    def route(self, question: str, qvec: np.ndarray, scope: QueryScope, trace: TraceRecorder,
              domain: Optional[str] = None) -> RoutingDecision:
        """Decide which domains (and collection) to search.

        An explicit ``domain`` is a hard filter: it is reported with confidence 1.0.
        """
        if domain is not None:
            trace.step("routing", f"explicit domain {domain!r}", domains=[domain])
            return RoutingDecision([DomainScore(domain=domain, confidence=1.0)])
        names = sorted(self._infos)
        versions = scope.search.versions
        if versions is not None:
            with_version = [n for n in names if set(self._infos[n].versions) & set(versions)]
            names = with_version or names
        if not names:
            return RoutingDecision([])
        if not self._config.routing or len(names) == 1:
            conf = 1.0 / len(names)
            trace.step("routing", "routing off or single domain: searching all", domains=names)
            return RoutingDecision([DomainScore(domain=n, confidence=round(conf, 6)) for n in names])
        offline = self._offline(question, qvec, scope, names, trace)
        if self._llm is not None:
            chosen = self._llm_route(question, names, offline, trace)
            if chosen is not None:
                return chosen
        return offline

    # ------------------------------------------------------------ offline
    def _offline(self, question, qvec, scope, names, trace) -> RoutingDecision:
        dirs = self._data.directories
        dmask = dirs.mask(scope.with_domains(names))
        sims = dirs.similarities(qvec)
        qterms = terms(question)
        top = {}
        for n in names:
            info = self._infos[n]
            titles = [dirs.title[i] for i in self._top_level if dirs.domain[i] == n and dmask[i]]
            top[n] = " ".join([info.description or "", *titles, *info.collections])
        bm25 = {}
        for n in names:
            shard = self._reader.shard(n)
            hits = shard.search(question, 1, scope.search.with_domains([n])) if shard else []
            bm25[n] = hits[0][1] if hits else 0.0
        bm_total = sum(bm25.values())
        rows = []
        for n in names:
            in_dom = dmask & (dirs.domain == n)
            cos = float(sims[in_dom].max()) if in_dom.any() else 0.0
            parts = {
                "name": name_match(question, n),
                "text": overlap(qterms, top[n]),
                "cos": max(cos, 0.0),
                "bm25": bm25[n] / bm_total if bm_total > 0 else 0.0,
            }
            score = (_W_NAME * parts["name"] + _W_TEXT * parts["text"] + _W_COS * parts["cos"]
                     + _W_BM25 * parts["bm25"])
            rows.append((n, score, parts))
        probs = _softmax(np.array([r[1] for r in rows]))
        order = sorted(range(len(rows)), key=lambda i: (-probs[i], rows[i][0]))
        best = probs[order[0]]
        kept = [i for i in order if probs[i] >= self._config.routing_threshold * best]
        kept = kept[: self._config.max_domains]
        decision = RoutingDecision([DomainScore(domain=rows[i][0], confidence=round(float(probs[i]), 6))
                                    for i in kept])
        trace.step("routing", f"offline routing kept {len(kept)} of {len(rows)} domains",
                   kept=list(decision.names),
                   scores={rows[i][0]: {k: round(v, 4) for k, v in rows[i][2].items()}
                           | {"confidence": round(float(probs[i]), 4)} for i in order})
        return decision

    # ------------------------------------------------------------ LLM (DCD)
    def _llm_route(self, question, names, offline: RoutingDecision, trace) -> Optional[RoutingDecision]:
        from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

        listing = "\n".join(f"- {n}: {self._infos[n].description or '(no description)'}"
                            f" collections: {', '.join(self._infos[n].collections) or '-'}" for n in names)
        system = ("You route a user question to the one knowledge domain that can answer it. "
                  "Answer with JSON naming exactly one domain from the list. " + UNTRUSTED_NOTICE)
        user = f"Domains:\n{listing}\n\nQuestion:\n{wrap_untrusted(question, 'QUESTION')}"
        model = choice_model("DomainChoice", "domain", names)
        try:
            picked = model.model_validate(self._llm.structured(
                "route_domain", [{"role": "system", "content": system}, {"role": "user", "content": user}],
                model)).domain
        except (LLMError, ValueError) as exc:
            trace.step("routing", "LLM domain router failed: offline ranking used", error=str(exc)[:200])
            return None
        collections = None
        colls = sorted(self._infos[picked].collections)
        if len(colls) > 1:
            cmodel = choice_model("CollectionChoice", "collection", [*colls, ALL_COLLECTIONS])
            csys = ("Pick the one collection of the domain that can answer the question, or "
                    f"{ALL_COLLECTIONS} when unsure. Answer with JSON. " + UNTRUSTED_NOTICE)
            cuser = (f"Domain: {picked}\nCollections: {', '.join(colls)}\n\n"
                     f"Question:\n{wrap_untrusted(question, 'QUESTION')}")
            try:
                c = cmodel.model_validate(self._llm.structured(
                    "route_collection", [{"role": "system", "content": csys},
                                         {"role": "user", "content": cuser}], cmodel)).collection
                collections = None if c == ALL_COLLECTIONS else (c,)
            except (LLMError, ValueError) as exc:
                trace.step("routing", "LLM collection router failed: whole domain searched",
                           error=str(exc)[:200])
        trace.step("routing", f"LLM router chose {picked!r}", domain=picked,
                   collections=list(collections) if collections else None)
        return RoutingDecision([DomainScore(domain=picked, confidence=1.0)], collections)
