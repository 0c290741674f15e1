"""Knowledge-base routing: rank the domains for a question, keep the relevant ones.

Offline, a domain's score combines (a) a product/domain-name match (exact token sequences win:
"Galaxy S10" names ``Galaxy_S10`` fully but ``Galaxy_S10e`` only partly), word overlap with its
description and top-level directory titles, (b) the best cosine similarity of the query vector
to its visible directory nodes and its share of the top BM25 scores. Scores become confidences
with a softmax; domains within ``RoutingSettings.threshold`` of the best are kept (at most
``max_domains``). With an LLM, a DCD-style router picks a domain then a collection, each through
a response model whose label is constrained to the real names; any failure falls back to the
offline ranking.

Only what the caller may read is considered (:mod:`vdgr_core.query.visibility`): a domain
without a readable row is not scored, named, described or offered to the LLM, and the
collections and versions of a domain are those of its readable rows; name-token weights are
computed over the visible domain names.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from schemas.config import RoutingSettings, slice_of
from schemas.errors import LLMError
from vdgr_core.query.constrained import choice_model
from schemas import tables as T
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.view import IndexView
from vdgr_core.query.result import DomainScore
from vdgr_core.query.textutil import _TOKEN, overlap, terms, tokens
from vdgr_core.query.trace import TraceRecorder
from vdgr_core.query.visibility import VisibilityIndex

ALL_COLLECTIONS = "ALL"
_TEMPERATURE = 0.2
_W_NAME, _W_TEXT, _W_COS, _W_BM25 = 2.0, 0.5, 1.0, 0.5
STRIP_MIN = 0.75     # name score from which the matched span is the domain's name


@dataclass(frozen=True)
class RoutingDecision:
    """Domains to search (best first, with confidence) and an optional collection filter."""

    domains: list[DomainScore]
    collections: Optional[tuple[str, ...]] = None
    # retrieval text: the question without the span naming the chosen domain (None: as asked)
    query: Optional[str] = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.domain for d in self.domains)


def name_tokens(name: str) -> list[str]:
    """Tokens of a domain or collection name (``_`` and ``-`` separate words)."""
    return tokens(name.replace("_", " ").replace("-", " "))


def _token_spans(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer((text or "").lower())]


class NameMatcher:
    """Which domain a question names, weighting name tokens by how distinctive they are.

    A token shared by every domain name (``galaxy`` in 33 phone manuals, ``zhk`` in 15
    residential complexes) says nothing about which one is meant; a token in one name only
    (``s10``, ``skyline``) says everything. Each name token gets the weight
    ``log((N + 1) / df)`` over the N domain names. The score of a name is the weighted share of
    its tokens covered by the best contiguous run of them found contiguously in the question
    (so "RC City Skyline" names ``zhk_city_skyline`` with score ~0.98, "Galaxy S10" names
    ``Galaxy_S10`` fully and ``Galaxy_S10e`` hardly at all); tokens present but not contiguous
    count half. The run's character span is returned so the caller can strip it.
    """

    def __init__(self, names: Sequence[str]):
        self._toks = {n: name_tokens(n) for n in names}
        df: dict[str, int] = {}
        for ts in self._toks.values():
            for t in set(ts):
                df[t] = df.get(t, 0) + 1
        total = max(len(self._toks), 1)
        self._w = {t: math.log((total + 1) / c) for t, c in df.items()}

    def match(self, question: str, name: str) -> tuple[float, Optional[tuple[int, int]]]:
        """``(score in [0, 1], (start, end) of the matched run in question or None)``."""
        n = self._toks.get(name) or name_tokens(name)
        q = _token_spans(question)
        if not n or not q:
            return 0.0, None
        w = [self._w.get(t, math.log(2.0)) for t in n]
        total = sum(w)
        if total <= 0:
            return 0.0, None
        qt = [t for t, _, _ in q]
        best, span = 0.0, None
        for i in range(len(n)):
            for j in range(len(n), i, -1):
                run = n[i:j]
                gain = sum(w[i:j]) / total
                if gain <= best:
                    continue
                for a in range(len(qt) - len(run) + 1):
                    if qt[a:a + len(run)] == run:
                        best, span = gain, (q[a][1], q[a + len(run) - 1][2])
                        break
        present = set(qt)
        loose = 0.5 * sum(wt for t, wt in zip(n, w) if t in present) / total
        if loose > best:
            return loose, None
        return best, span


def strip_span(question: str, span: Optional[tuple[int, int]]) -> str:
    """The question without the characters of ``span`` (whitespace tidied)."""
    if not span:
        return question
    return " ".join((question[: span[0]] + " " + question[span[1]:]).split())


@dataclass(frozen=True)
class _View:
    """The domains one caller may see: their infos (readable collections and versions only)
    and a name matcher weighted over their names only."""

    infos: dict
    matcher: NameMatcher


def _softmax(scores: np.ndarray) -> np.ndarray:
    z = np.exp((scores - scores.max()) / _TEMPERATURE)
    return z / z.sum()


class Router:
    """Ranks the domains of an index for a question.

    Parameters
    ----------
    data : IndexView
        The index: its manifest's domains, its BM25 shards (``data.reader``) and directories.
    config : RoutingSettings
        On/off, ``threshold`` and ``max_domains`` (a ``QueryConfig`` gives its slice).
    vectors : VectorSearch
        For the best directory cosine per domain.
    llm : LLMClient, optional
    """

    def __init__(self, data: IndexView, config: RoutingSettings, vectors, llm=None):
        self._data = data
        self._infos = {d.name: d for d in data.reader.manifest.domains}
        self._reader = data.reader
        self._config = slice_of(config, RoutingSettings)
        self._vectors = vectors
        self._llm = llm
        self._top_by_domain: dict[str, list[int]] = {}
        self._top_texts: dict[tuple, str] = {}
        self._matcher = NameMatcher(sorted(self._infos))
        self._visibility = VisibilityIndex(data)
        self._views: dict[frozenset, _View] = {}

    def _top_text(self, domain: str, scope: QueryScope, view: _View) -> str:
        """A domain's description, visible top-level titles and collections (cached per scope)."""
        key = (domain, scope.key()[0], scope.search.versions, view.infos[domain])
        text = self._top_texts.get(key)
        if text is None:
            dirs = self._data.directories
            level = np.array(self._top_level(domain), dtype=np.int64)
            mask = dirs.mask(scope.with_domains([domain]))
            titles = dirs.title.take(level[mask[level]]) if len(level) else []
            info = view.infos[domain]
            text = " ".join([info.description or "", *titles, *info.collections])
            if len(self._top_texts) >= 4096:
                self._top_texts.pop(next(iter(self._top_texts)))
            self._top_texts[key] = text
        return text

    def _top_level(self, domain: str) -> list[int]:
        """The directories just below a domain's roots (its collections and top folders)."""
        if domain not in self._top_by_domain:
            dirs = self._data.directories
            self._top_by_domain[domain] = sorted(c for r in dirs.roots(domain) for c in dirs.children(r))
        return self._top_by_domain[domain]

    def visibility(self, groups):
        """What ``groups`` may read (:class:`vdgr_core.query.visibility.Visible`)."""
        return self._visibility.for_groups(groups)

    def _view(self, groups) -> _View:
        """What ``groups`` may see of the domains (cached per set of visible domains)."""
        visible = self._visibility.for_groups(groups)
        key = frozenset((d, visible.collections[d], visible.versions[d]) for d in visible.domains
                        if d in self._infos)
        view = self._views.get(key)
        if view is None:
            infos = {d: dataclasses.replace(self._infos[d], collections=c, versions=v) for d, c, v in key}
            view = self._views[key] = _View(infos, NameMatcher(sorted(infos)))
        return view

    def route(self, question: str, qvec: np.ndarray, scope: QueryScope, trace: TraceRecorder,
              domain: Optional[str] = None) -> RoutingDecision:
        """Decide which domains (and collection) to search.

        An explicit ``domain`` is a hard filter: it is reported with confidence 1.0. A domain, or
        a requested version, the caller cannot read is resolved exactly like one that does not
        exist, here, before any search work: no domain, nothing searched (the same trace,
        answer and timings for both).
        """
        view = self._view(scope.groups)
        versions = scope.search.versions
        if domain is not None:
            if domain not in view.infos:
                trace.step("routing", f"explicit domain {domain!r}: no such domain", domains=[])
                return RoutingDecision([])
            if versions is not None and not set(view.infos[domain].versions) & set(versions):
                trace.step("routing", f"explicit domain {domain!r}: no such version", domains=[])
                return RoutingDecision([])
            trace.step("routing", f"explicit domain {domain!r}", domains=[domain])
            return self._finish(question, RoutingDecision([DomainScore(domain=domain, confidence=1.0)]), trace,
                                view)
        names = sorted(view.infos)
        if versions is not None:
            # only domains with a readable document of that version (the search filters on it)
            names = [n for n in names if set(view.infos[n].versions) & set(versions)]
            if not names:
                trace.step("routing", "no readable domain has that version", domains=[])
        if not names:
            return RoutingDecision([])
        if not self._config.enabled or len(names) == 1:
            conf = 1.0 / len(names)
            trace.step("routing", "routing off or single domain: searching all", domains=names)
            return RoutingDecision([DomainScore(domain=n, confidence=round(conf, 6)) for n in names])
        offline = self._offline(question, qvec, scope, names, trace, view)
        if self._llm is not None:
            chosen = self._llm_route(question, names, offline, trace, view)
            if chosen is not None:
                return self._finish(question, chosen, trace, view)
        return self._finish(question, offline, trace, view)

    def _finish(self, question: str, decision: RoutingDecision, trace: TraceRecorder,
                view: _View) -> RoutingDecision:
        """Add the retrieval text to a routing decision.

        Once a domain is chosen, the words of the question that name it carry no information
        for ranking *inside* it (every chunk of the Galaxy S10 manual is about the Galaxy S10)
        but they still pull BM25 and the query vector toward chunks that happen to repeat the
        product name. When the top domain is named (name score >= ``STRIP_MIN``), that span is
        removed from the text the routes search with.
        """
        if not decision.domains:
            return decision
        score, span = view.matcher.match(question, decision.domains[0].domain)
        if score < STRIP_MIN or span is None:
            return decision
        stripped = strip_span(question, span)
        if not terms(stripped):            # never strip a question down to nothing
            return decision
        trace.step("routing", "retrieval text without the domain's name", query=stripped)
        return RoutingDecision(decision.domains, decision.collections, stripped)

    def named_text(self, question: str) -> Optional[str]:
        """The retrieval text routing will most likely choose: the question without the span
        of the best-named domain (None when no domain is named). Lets the caller embed both
        texts in one batch before routing. (Only which text is embedded ahead depends on it;
        the routing decision uses the caller's view.)"""
        best, span = 0.0, None
        for n in self._infos:
            sc, sp = self._matcher.match(question, n)
            if sc > best:
                best, span = sc, sp
        if best < STRIP_MIN or span is None:
            return None
        stripped = strip_span(question, span)
        return stripped if terms(stripped) else None

    # ------------------------------------------------------------ offline
    def _offline(self, question, qvec, scope, names, trace, view: _View) -> RoutingDecision:
        qterms = terms(question)
        top = {n: self._top_text(n, scope, view) for n in names}
        bm25 = {}
        for n in names:
            shard = self._reader.shard(n)
            hits = shard.search(question, 1, scope.search.with_domains([n])) if shard else []
            bm25[n] = hits[0][1] if hits else 0.0
        bm_total = sum(bm25.values())
        cheap = {n: {"name": view.matcher.match(question, n)[0], "text": overlap(qterms, top[n]),
                     "bm25": bm25[n] / bm_total if bm_total > 0 else 0.0} for n in names}
        # best directory cosine per domain, scanned exactly; when every domain's directories
        # together pass the scan budget, only for the domains the cheap signals rank first
        # (a cascade; the others' dense signal counts 0)
        partial = {n: _W_NAME * p["name"] + _W_TEXT * p["text"] + _W_BM25 * p["bm25"] for n, p in cheap.items()}
        dense_for = self._vectors.shortlist(T.DIRECTORIES, sorted(names, key=lambda n: (-partial[n], n)))
        if len(dense_for) < len(names):
            trace.step("routing", f"dense signal for the {len(dense_for)} of {len(names)} domains the names "
                       "and BM25 rank first (the others' directories exceed the exact scan budget)",
                       dense_for=dense_for)
        best_cos = self._vectors.best_per_domain(T.DIRECTORIES, qvec, scope, dense_for)
        rows = []
        for n in names:
            c = cheap[n]
            parts = {"name": c["name"], "text": c["text"], "cos": max(float(best_cos.get(n, 0.0)), 0.0),
                     "bm25": c["bm25"]}
            score = (_W_NAME * parts["name"] + _W_TEXT * parts["text"] + _W_COS * parts["cos"]
                     + _W_BM25 * parts["bm25"])
            rows.append((n, score, parts))
        probs = _softmax(np.array([r[1] for r in rows]))
        order = sorted(range(len(rows)), key=lambda i: (-probs[i], rows[i][0]))
        best = probs[order[0]]
        kept = [i for i in order if probs[i] >= self._config.threshold * best]
        kept = kept[: self._config.max_domains]
        decision = RoutingDecision([DomainScore(domain=rows[i][0], confidence=round(float(probs[i]), 6))
                                    for i in kept])
        trace.step("routing", f"offline routing kept {len(kept)} of {len(rows)} domains",
                   kept=list(decision.names),
                   scores={rows[i][0]: {k: round(v, 4) for k, v in rows[i][2].items()}
                           | {"confidence": round(float(probs[i]), 4)} for i in order})
        return decision

    # ------------------------------------------------------------ LLM (DCD)
    def _llm_route(self, question, names, offline: RoutingDecision, trace, view: _View) -> Optional[RoutingDecision]:
        from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE, wrap_untrusted

        # names, descriptions and collections come from the corpus: data, inside the delimiters
        listing = "\n".join(wrap_untrusted(
            f"domain: {n}\ndescription: {view.infos[n].description or '(no description)'}\n"
            f"collections: {', '.join(view.infos[n].collections) or '-'}", "DOMAIN") for n in names)
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
        colls = sorted(view.infos[picked].collections)
        if len(colls) > 1:
            cmodel = choice_model("CollectionChoice", "collection", [*colls, ALL_COLLECTIONS])
            csys = ("Pick the one collection of the domain that can answer the question, or "
                    f"{ALL_COLLECTIONS} when unsure. Answer with JSON. " + UNTRUSTED_NOTICE)
            cuser = (wrap_untrusted(f"domain: {picked}\ncollections: {', '.join(colls)}", "DOMAIN")
                     + f"\n\nQuestion:\n{wrap_untrusted(question, 'QUESTION')}")
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
        return RoutingDecision([DomainScore(domain=picked, confidence=1.0,
                                            collection=collections[0] if collections else None)], collections)
