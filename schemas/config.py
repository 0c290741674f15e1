"""Typed, validated configuration objects (pydantic, frozen).

Every component takes the piece of configuration it needs as a typed object; nothing
reads a dict by string keys.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas.errors import SettingsChangeError


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LLMConfig(_Frozen):
    """An OpenAI-compatible chat endpoint."""

    base_url: str
    model: str
    api_key: str = Field(default="not-needed", repr=False)
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    backoff_s: float = Field(default=0.5, ge=0)
    max_concurrency: int = Field(default=4, ge=1, le=256)
    cache_path: Optional[str] = None   # sqlite file; None = no persistent cache
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_tokens: int = Field(default=512, ge=1)
    # how structured output is requested: OpenAI's "json_schema" (strict), or "json_object" with
    # a "schema" (llama.cpp's server, which constrains generation to the schema by a grammar)
    structured_output: Literal["json_schema", "json_object"] = "json_schema"


class EmbeddingConfig(_Frozen):
    """Which embedder to use. ``kind`` selects the implementation explicitly."""

    kind: Literal["minilm", "openai", "hashing"] = "minilm"
    model_path: Optional[str] = None      # minilm: a local sentence-transformers folder
    base_url: Optional[str] = None        # openai
    model: Optional[str] = None           # openai model name
    api_key: str = Field(default="not-needed", repr=False)
    dim: int = Field(default=384, ge=8, le=8192)
    # texts per request (the OpenAI endpoint; the texts the build sends the local model at once);
    # the local model's calls have a shape fixed by token count, so vectors never depend on it
    batch_size: int = Field(default=64, ge=1, le=4096)
    # minilm: the numerics of stored vectors. "auto" is bf16 where the CPU computes bf16 natively
    # (AVX512-BF16 or AMX), else int8 on x86 with AVX2 (a BERT folder), else float32; a build
    # records the precision it resolved, so an update keeps the index's vectors on any host
    # (vdgr_core.embedding.host_precision, resolve_precision); "int8": weight products in int8
    # with each row scaled on its own (a BERT folder only)
    precision: Literal["auto", "fp32", "bf16", "int8"] = "auto"

    @model_validator(mode="before")
    @classmethod
    def _legacy_bf16(cls, data):
        """Settings recorded before ``precision`` existed said ``bf16: true|false``."""
        if isinstance(data, dict) and "bf16" in data:
            data = dict(data)
            bf16 = data.pop("bf16")
            data.setdefault("precision", "bf16" if bf16 else "fp32")
        return data

    @model_validator(mode="after")
    def _check(self) -> "EmbeddingConfig":
        if self.kind == "openai" and not (self.base_url and self.model):
            raise ValueError("embedding kind 'openai' needs base_url and model")
        return self

    @classmethod
    def for_index(cls, embedding_model: str, dim: int, /, **given) -> "EmbeddingConfig":
        """The embedding an index's manifest names (``embedding_model``, e.g.
        ``minilm:all-MiniLM-L6-v2:fp32``, and ``dim``), with the ``given`` fields (those not
        None) on top: what a query, serve or update process must embed with."""
        kind, _, rest = embedding_model.partition(":")
        fields: dict = {"kind": kind if kind in ("minilm", "openai", "hashing") else "minilm", "dim": dim}
        if fields["kind"] == "minilm":       # minilm:<name>:<precision>[:<call scheme>]
            parts = rest.split(":")
            fields["precision"] = parts[1] if len(parts) > 1 and parts[1] in ("fp32", "bf16", "int8") else "bf16"
        fields.update({k: v for k, v in given.items() if v is not None})
        if fields["kind"] != "minilm":
            fields.pop("precision", None)
        return cls(**fields)


class ChunkingConfig(_Frozen):
    max_tokens: int = Field(default=200, ge=16, le=8192)
    overlap_tokens: int = Field(default=14, ge=0)

    @model_validator(mode="after")
    def _check(self) -> "ChunkingConfig":
        if self.overlap_tokens >= self.max_tokens // 2:
            raise ValueError("overlap_tokens must be less than half of max_tokens")
        return self


class LimitsConfig(_Frozen):
    max_file_bytes: int = Field(default=20_000_000, ge=1)
    max_sections_per_doc: int = Field(default=20_000, ge=1)
    # folders below the corpus root deeper than this (the domain is depth 1) are not scanned:
    # each becomes one dead letter
    max_folder_depth: int = Field(default=32, ge=1, le=1000)


class StoreConfig(_Frozen):
    """What the commit builds besides the tables: vector and scalar indexes, BM25 sub-shards,
    per-domain query layouts (ARCHITECTURE.md, "Index layout")."""

    # LanceDB vector index on the ``vector`` column of contents, directories and entities, once
    # a table has ``vector_index_min_rows`` rows (below that a flat scan is as fast). IVF_SQ
    # scans its probed partitions' 8-bit vectors, so rows that repeat (or nearly repeat) across
    # versions cost it nothing; HNSW's neighbour lists fill with such repeats and a scope-free
    # search loses the graph's far regions (1M grown chunks, limit 10: recall 0.81 against
    # IVF_SQ's 0.996, docs/SCALE.md)
    vector_index: Literal["ivf_sq", "ivf_hnsw_sq", "ivf_pq", "none"] = "ivf_sq"
    vector_index_min_rows: int = Field(default=50_000, ge=1)
    vector_rows_per_partition: int = Field(default=8192, ge=64)   # IVF partitions = rows / this
    hnsw_m: int = Field(default=16, ge=4, le=128)
    hnsw_ef_construction: int = Field(default=100, ge=10)
    pq_sub_vectors: Optional[int] = None                          # IVF_PQ: default dim / 8
    # an update re-trains a vector index once its unindexed rows exceed this share of the table
    vector_index_retrain_share: float = Field(default=0.1, gt=0, le=1)
    # BTree / bitmap indexes on id and filter columns once a table has this many rows
    scalar_index_min_rows: int = Field(default=10_000, ge=1)
    # a domain with more documents than this is split into 2^k BM25 sub-shards
    bm25_subshard_max_documents: int = Field(default=2000, ge=1)
    # the entity graph in each domain's query layout (has_entity + cooccurs CSR arrays)
    graph_adjacency: bool = True
    # synonym edges stored in the layout between entities whose vectors reach this cosine
    # (a query keeps those above its own QueryConfig.graph_synonym_min)
    graph_synonym_min: float = Field(default=0.9, ge=0, le=1.01)


@dataclass(frozen=True)
class ParseSettings:
    """What turns a corpus file into a document's chunks: the size limits and the chunking."""

    limits: LimitsConfig
    chunking: ChunkingConfig


@dataclass(frozen=True)
class AnnotateSettings:
    """A chunk's annotation: its summary and at most ``max_terms`` technical terms (a section's
    first chunk starts with its title's when ``title_entities``), offline or with ``llm``."""

    max_terms: int
    summary_sentences: int
    summary_max_chars: int
    title_entities: bool
    llm: Optional[LLMConfig] = None


@dataclass(frozen=True)
class SummarySettings:
    """Directory summaries, bottom-up: at most ``max_chars`` each, extractive or with ``llm``."""

    max_chars: int
    llm: Optional[LLMConfig] = None


@dataclass(frozen=True)
class EmbedSettings:
    """The embedder, and the index whose embedding cache it reads first."""

    embedding: EmbeddingConfig
    index: str


@dataclass(frozen=True)
class BuildSlices:
    """The configuration slice of each indexing component (:attr:`BuildConfig.slices`)."""

    parse: ParseSettings
    limits: LimitsConfig
    annotate: AnnotateSettings
    embed: EmbedSettings
    store: StoreConfig
    summaries: SummarySettings


class BuildConfig(_Frozen):
    """Everything the indexing pipeline needs besides the Beam options.

    The fields are flat (the JSON, the manifest's recorded settings and the CLI flags name them
    so); only the entry points (``run_build``, ``run_update``, the pipeline constructors) take
    the whole configuration, and each component takes its own typed slice (:attr:`slices`).
    """

    corpus: str
    index: str
    chunking: ChunkingConfig = ChunkingConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    llm: Optional[LLMConfig] = None
    limits: LimitsConfig = LimitsConfig()
    store: StoreConfig = StoreConfig()
    summary_sentences: int = Field(default=2, ge=1, le=10)
    summary_max_chars: int = Field(default=400, ge=50)
    max_entities_per_chunk: int = Field(default=24, ge=1)
    # the entities of the chunk that opens a section start with its title's
    # (vdgr_core.entities.title_terms): the graph links the section to every passage that names
    # its title, the bridge of a multi-hop question (bench.quality.ablation, MuSiQue development half)
    title_entities: bool = True
    # An update whose arriving (added or changed) documents number at most this is processed in
    # the driver process, without a pipeline start-up; a larger one runs the Beam pipeline. The
    # index is the same either way; this setting is not part of the build settings (manifest).
    update_in_driver_max_documents: int = Field(default=200, ge=0)
    # How long a build or update waits for another writer of the same index to finish
    # (vdgr_core/store/lock.py) before it gives up with IndexBusyError; not a build setting.
    lock_timeout_s: float = Field(default=0.0, ge=0)

    @property
    def slices(self) -> BuildSlices:
        """Each indexing component's frozen slice of these settings (computed on access, so a
        ``model_copy(update=...)`` is reflected)."""
        return BuildSlices(
            parse=ParseSettings(self.limits, self.chunking),
            limits=self.limits,
            annotate=AnnotateSettings(self.max_entities_per_chunk, self.summary_sentences, self.summary_max_chars,
                                      self.title_entities, self.llm),
            embed=EmbedSettings(self.embedding, self.index),
            store=self.store,
            # a directory summary joins its children's: room above a chunk summary's length
            summaries=SummarySettings(self.summary_max_chars + 200, self.llm),
        )

    def settings(self, content_rules: str) -> dict:
        """The build settings recorded in the manifest (no paths, no secrets).

        Two builds with equal settings of one corpus give the same index; an update compares
        its settings with the recorded ones (:func:`settings_diff`).

        Parameters
        ----------
        content_rules : str
            ``vdgr_core.safety.content_rules()``: not a user setting but the masking, flag and
            parser rules every row depends on, recorded with the settings (a new release of
            them rebuilds every domain on the next update, see :func:`check_settings`).
        """
        d = self.model_dump(mode="json", exclude=_NOT_SETTINGS)
        if d.get("llm"):
            d["llm"].pop("api_key", None)
        d.get("embedding", {}).pop("api_key", None)
        d["content_rules"] = content_rules
        return d

    @classmethod
    def from_settings(cls, settings: dict, *, corpus: str, index: str, **extra) -> "BuildConfig":
        """The configuration whose :meth:`settings` are ``settings`` (as recorded in a manifest)."""
        settings = {k: v for k, v in settings.items() if k != "content_rules"}
        for key, before in _BEFORE_RECORDED.items():     # indexes recorded before the setting existed
            settings.setdefault(key, before)
        return cls(corpus=corpus, index=index, **settings, **extra)


# Settings that change rows, added after indexes were recorded without them: such an index was
# built with the value given here (not the new default), so an update keeps building that way.
_BEFORE_RECORDED = {"title_entities": False}

# Not build settings: where the corpus and index are, and how an update is executed.
# How long to wait for the index lock and how deep the scan goes change no row either.
_NOT_SETTINGS = {"corpus": True, "index": True, "update_in_driver_max_documents": True, "lock_timeout_s": True,
                 "limits": {"max_folder_depth"}}


def settings_diff(recorded: dict, asked: dict, prefix: str = "") -> list[str]:
    """Human-readable differences ``name: recorded -> asked`` between two settings dicts."""
    out = []
    for key in sorted(set(recorded) | set(asked)):
        a, b = recorded.get(key), asked.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += settings_diff(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} -> {b!r}")
    return out


def check_settings(recorded: dict, config: "BuildConfig", settings_change: bool, content_rules: str) -> bool:
    """True when ``config`` asks for other build settings than ``recorded`` and that is allowed,
    or when the content rules (credential masking, injection flags) changed since the index
    was built: then every domain is rebuilt without being asked, so no row keeps text made
    under older rules.

    ``content_rules`` is ``vdgr_core.safety.content_rules()`` (:meth:`BuildConfig.settings`).

    Raises
    ------
    SettingsChangeError
        When the settings differ and ``settings_change`` is False: an update keeps the settings
        the index was built with unless a change (a rebuild of every domain) is asked for.
    """
    rules_changed = recorded.get("content_rules") != content_rules
    try:   # settings added since the index was built take their defaults
        recorded = BuildConfig.from_settings(recorded, corpus=config.corpus,
                                             index=config.index).settings(content_rules)
    except ValueError:
        pass
    diff = settings_diff(recorded, config.settings(content_rules))
    if diff and not settings_change:
        raise SettingsChangeError(
            "these build settings differ from the ones recorded in the index: " + "; ".join(diff)
            + ". An update keeps the recorded settings: leave the settings out to use them, or ask "
            "for the change explicitly (vdgr update --new-settings; run_update(settings_change=True)),"
            " which rebuilds every domain with the new settings")
    return bool(diff) or rules_changed


class RerankerConfig(_Frozen):
    # "section": offline re-scoring by how much of the question the whole section covers;
    # "cross_encoder": a local model folder (no package ships cross-encoder weights offline)
    kind: Literal["none", "section", "cross_encoder", "llm"] = "none"
    model_path: Optional[str] = None
    top_n: int = Field(default=30, ge=1)

    @model_validator(mode="after")
    def _check(self) -> "RerankerConfig":
        if self.kind == "cross_encoder" and not self.model_path:
            raise ValueError("reranker 'cross_encoder' needs model_path (a local folder)")
        return self


_ROUTE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(what)


@dataclass(frozen=True)
class RetrieveSettings:
    """What the retrieve stage runs: evidence items wanted, routes, their composition.

    Attributes
    ----------
    k : int
        Evidence items (sections) a query returns.
    routes : tuple of str
        Route names, as registered in :mod:`vdgr_core.query.routes`.
    composition : {"parallel", "sequential"}
        All routes fused, or route 1 first and the others while the evidence falls short.
    named_first : bool
        Within each document, the sections whose title the question names come first
        (:mod:`vdgr_core.query.named`).
    copies_last : bool
        A section that repeats an earlier one of the same domain and version (same title, chunk
        count and first chunk: a manual page that includes another's options, perhaps with
        another closing line) goes behind the first ``k``
        (:func:`vdgr_core.query.fusion.copies_last`).
    recall_tail : bool
        The first half of ``k`` as fused, the other places to each single retriever's (BM25,
        dense) best section not shown yet, in turn (:func:`vdgr_core.query.fusion.recall_tail`).
    entry_first : bool
        For a question asking for an option or a default, a reference entry among the first
        three evidence items goes first when the first is not one
        (:func:`vdgr_core.query.evidence.entry_first`).
    """

    k: int = 10
    routes: tuple[str, ...] = ("hybrid", "graph")
    composition: str = "parallel"
    named_first: bool = True
    copies_last: bool = True
    recall_tail: bool = True
    entry_first: bool = False

    def __post_init__(self):
        _check(1 <= self.k <= 200, f"k must be in [1, 200], got {self.k}")
        _check(len(self.routes) > 0, "routes must name at least one route")
        _check(self.composition in ("parallel", "sequential"), f"unknown composition {self.composition!r}")


@dataclass(frozen=True)
class RoutingSettings:
    """The router's slice: on/off, the confidence share kept, at most how many domains."""

    enabled: bool = True
    threshold: float = 0.5
    max_domains: int = 3

    def __post_init__(self):
        _check(0 <= self.threshold <= 1, f"routing threshold must be in [0, 1], got {self.threshold}")
        _check(self.max_domains >= 1, f"max_domains must be >= 1, got {self.max_domains}")


@dataclass(frozen=True)
class FusionSettings:
    """How section lists are fused: route 1's halves, the routes' lists, the re-ranked head.

    ``route_weights`` is a tuple of ``(route, weight)`` pairs (frozen); :meth:`weights` gives
    the mapping :func:`vdgr_core.query.fusion.fuse` takes.
    """

    rrf_k: int = 60
    hybrid_fusion: str = "zscore"
    route_fusion: str = "rrf"
    route_weights: tuple[tuple[str, float], ...] = (("bm25", 1.0), ("dense", 1.0), ("hybrid", 1.0),
                                                    ("toc", 0.5), ("graph", 0.1))
    rerank_top_n: int = 30

    def __post_init__(self):
        _check(self.rrf_k >= 1, f"rrf_k must be >= 1, got {self.rrf_k}")
        for m in (self.hybrid_fusion, self.route_fusion):
            _check(m in ("rrf", "convex", "zscore"), f"unknown fusion method {m!r}")
        _check(self.rerank_top_n >= 1, f"rerank top_n must be >= 1, got {self.rerank_top_n}")

    def weights(self) -> dict[str, float]:
        """The per-route weights as a dict."""
        return dict(self.route_weights)


@dataclass(frozen=True)
class GraphSettings:
    """The graph route's slice (personalised PageRank second hop)."""

    n: int = 5                     # passage seeds
    beta: float = 0.05             # restart mass of the question's entities
    keep_head: bool = True         # route 1's best section stays first
    synonym_min: float = 0.95      # synonym edges from this cosine (above 1: none)
    keep_seeds: bool = False       # route 1's seed sections the walk did not reach keep their places

    def __post_init__(self):
        _check(self.n >= 1, f"graph_n must be >= 1, got {self.n}")
        _check(0 <= self.beta <= 1, f"graph_beta must be in [0, 1], got {self.beta}")
        _check(0 <= self.synonym_min <= 1.01, f"graph_synonym_min must be in [0, 1.01], got {self.synonym_min}")


@dataclass(frozen=True)
class AnnSettings:
    """Dense search: exact layout scans up to ``exact_max_rows``, else the vector index."""

    nprobes: int = 64
    refine_factor: int = 16
    ef: Optional[int] = None
    exact_max_rows: int = 200_000

    def __post_init__(self):
        _check(self.nprobes >= 1 and self.refine_factor >= 1, "ann_nprobes and ann_refine_factor must be >= 1")
        _check(self.ef is None or self.ef >= 1, f"ann_ef must be >= 1, got {self.ef}")
        _check(self.exact_max_rows >= 0, f"exact_max_rows must be >= 0, got {self.exact_max_rows}")


@dataclass(frozen=True)
class TocSettings:
    """The TOC route's slice: coarse label matches, fine picks, sections kept."""

    coarse_l: int = 50
    fine: int = 5
    max_contents: int = 40

    def __post_init__(self):
        _check(min(self.coarse_l, self.fine, self.max_contents) >= 1, "toc settings must be >= 1")


@dataclass(frozen=True)
class ExpandSettings:
    """The expand stage's slice: backtracking, reflection rounds, the bridge follow-up."""

    backtrack: bool = False
    backtrack_depth: int = 3
    reflection: bool = False
    reflection_rounds: int = 3
    reflection_bridge: bool = False

    def __post_init__(self):
        _check(0 <= self.backtrack_depth <= 10, f"backtrack_depth must be in [0, 10], got {self.backtrack_depth}")
        _check(0 <= self.reflection_rounds <= 10,
               f"reflection_rounds must be in [0, 10], got {self.reflection_rounds}")

    @property
    def rounds(self) -> int:
        """Reflection rounds to run (0 when reflection is off)."""
        return self.reflection_rounds if self.reflection else 0


@dataclass(frozen=True)
class AnswerSettings:
    """The answer stage's slice: corrective answers, the LLM's evidence budget, the one screen.

    Attributes
    ----------
    min_confidence : float
        Below this retrieval confidence the answer asks for clarification (0: never).
    context_budget_tokens : int
        Evidence tokens handed to an LLM after extractive compression (0: no compression).
    screen : bool
        Run the answer screen (credentials, personal data, unsupported sentences).
    min_support : float
        Share of a sentence's content words that must occur in the evidence.
    phone_regions : tuple of str
        Regions whose national phone formats the screen recognises.
    """

    min_confidence: float = 0.4
    context_budget_tokens: int = 600
    screen: bool = True
    min_support: float = 0.5
    phone_regions: tuple[str, ...] = ("US", "GB", "DE", "FR", "RU")

    def __post_init__(self):
        _check(0 <= self.min_confidence <= 1, f"min_confidence must be in [0, 1], got {self.min_confidence}")
        _check(self.context_budget_tokens >= 0, "context_budget_tokens must be >= 0")
        _check(0 <= self.min_support <= 1, f"min_support must be in [0, 1], got {self.min_support}")


@dataclass(frozen=True)
class QuerySlices:
    """The configuration slice of each query component (:attr:`QueryConfig.slices`)."""

    retrieve: RetrieveSettings
    routing: RoutingSettings
    fusion: FusionSettings
    graph: GraphSettings
    ann: AnnSettings
    toc: TocSettings
    expand: ExpandSettings
    answer: AnswerSettings


def slice_of(config, kind: type):
    """``config``'s slice of type ``kind``: ``config`` itself when it is one already, else
    the slice of a :class:`QueryConfig` (components accept either)."""
    if isinstance(config, kind):
        return config
    for f in dataclasses.fields(QuerySlices):
        got = getattr(config.slices, f.name)
        if isinstance(got, kind):
            return got
    raise TypeError(f"no {kind.__name__} slice in {type(config).__name__}")


class QueryConfig(_Frozen):
    """Query-side settings.

    The defaults were chosen on the development halves of the benchmark sets
    (bench/quality/fusion_study.py, bench/quality/ablation.py, BENCHMARKS.md). Route 1 fuses BM25 and dense
    sections by z-scores counted from each list's floor (a list counts by how far its best
    sections stand out from its own candidates, and a section one list did not return is
    scored at that list's floor, so a weak dense list cannot outvote a decisive BM25 hit).
    The graph route is the second hop: a Personalized PageRank seeded by route 1's first
    ``graph_n`` sections and, with ``graph_beta`` of the restart mass, the question's
    entities; its ranking replaces route 1's behind route 1's best section, which stays first
    (vdgr_core/query/pipeline.py). Offline
    reflection, the TOC route, backtracking and the bridge-entity follow-up are off: each
    loses on at least one development half. Each stays one setting away.

    The fields are flat (the JSON and the CLI flags name them so); each component takes its
    own typed slice of them (:attr:`slices`: routing, fusion, graph, ANN, TOC, expand,
    answer), never the whole configuration.
    """

    k: int = Field(default=10, ge=1, le=200)
    # route names as registered in vdgr_core/query/routes/ (built in: bm25, dense, hybrid, toc,
    # graph); a name no route registers is refused when a knowledge base is opened
    routes: tuple[str, ...] = ("hybrid", "graph")
    composition: Literal["parallel", "sequential"] = "parallel"
    # within each document, the sections whose title the question names come first
    # (vdgr_core.query.named; bench/quality/bench_refdocs.py and the ablation measure it)
    named_first: bool = True
    # a section repeating an earlier one of its domain (same title and text, e.g. options that
    # git-pull's page includes from git-merge's) goes behind the first k (fusion.copies_last)
    copies_last: bool = True
    # the second half of the first k goes to each single retriever's (BM25, dense) best section
    # not shown yet, in turn (fusion.recall_tail; bench_refdocs and the ablation measure it)
    recall_tail: bool = True
    # a question asking for an option or a default: a reference entry among the first three
    # evidence items goes first (evidence.entry_first). Off: hit@1 +4 on the Debian sets'
    # development halves, -2 on their test halves (DECISIONS.md, 2026-12-07)
    entry_first: bool = False
    rrf_k: int = Field(default=60, ge=1)
    # route 1's BM25 + dense fusion of sections (vdgr_core.query.fusion): "rrf" (ranks),
    # "convex" (min-max normalized scores) or "zscore" (scores standardized per list)
    hybrid_fusion: Literal["rrf", "convex", "zscore"] = "zscore"
    # fusion of the routes' section lists, with a weight per route
    route_fusion: Literal["rrf", "convex", "zscore"] = "rrf"
    route_weights: dict[str, float] = Field(
        default_factory=lambda: {"bm25": 1.0, "dense": 1.0, "hybrid": 1.0, "toc": 0.5, "graph": 0.1})
    toc_coarse_l: int = Field(default=50, ge=1)
    toc_fine: int = Field(default=5, ge=1)
    toc_max_contents: int = Field(default=40, ge=1)
    graph_n: int = Field(default=5, ge=1)
    graph_beta: float = Field(default=0.05, ge=0, le=1)
    # the walk brings sections up behind route 1's best section and leaves that one first
    # (vdgr_core.query.fusion.with_first_hop); False lets the walk's mass reorder the head too
    graph_keep_head: bool = True
    # route 1's graph_n best sections (the walk's seeds) that the walk did not reach keep their
    # places: a seed without entities (a one-line reference entry) does not sink behind all
    # the walk found. Off: +2 hit@5 on the Debian manuals' dev half, but -1 question on the
    # S10 dev half (bench.quality.ablation, row "full + keep unreached seeds")
    graph_keep_seeds: bool = False
    # entities whose vectors reach this cosine get synonym edges in the walk (above 1: none);
    # the layout stores edges from StoreConfig.graph_synonym_min (0.9), so lower asks no more
    graph_synonym_min: float = Field(default=0.95, ge=0, le=1.01)
    # dense search: a scope of at most exact_max_rows rows (or any scope of a table without a
    # vector index) scans its domains' layout vectors exactly; a larger one goes through the
    # LanceDB vector index: IVF partitions probed, candidates re-ranked on full vectors
    # (refine factor x k: 8-bit scalar quantization misorders near-equal vectors, so the
    # re-ranked pool must be wide; at 1M hashing-embedded chunks, limit 10, a domain
    # prefilter, IVF_HNSW_SQ: recall 0.93 at 4, 0.98 at 16; bench/performance/bench_ann.py). ``ann_ef``:
    # the candidate list of an IVF_HNSW_SQ index (None: LanceDB's 1.5 x the rows asked for,
    # refine included; never below those rows); an IVF_SQ or IVF_PQ index has none
    ann_nprobes: int = Field(default=64, ge=1)
    ann_refine_factor: int = Field(default=16, ge=1)
    ann_ef: Optional[int] = Field(default=None, ge=1)
    exact_max_rows: int = Field(default=200_000, ge=0)
    backtrack: bool = False
    backtrack_depth: int = Field(default=3, ge=0, le=10)
    reflection: bool = False
    reflection_rounds: int = Field(default=3, ge=0, le=10)
    # offline bridge-entity follow-up (IRCoT-style): entities of the top evidence that the
    # question does not name form one more search, merged below the first round's best
    reflection_bridge: bool = False
    routing: bool = True
    routing_threshold: float = Field(default=0.5, ge=0, le=1)
    max_domains: int = Field(default=3, ge=1)
    reranker: RerankerConfig = RerankerConfig()
    llm: Optional[LLMConfig] = None
    embedding: EmbeddingConfig = EmbeddingConfig()
    guardrails: "GuardrailConfig" = Field(default_factory=lambda: GuardrailConfig())
    # corrective answers: below this retrieval confidence the answer asks for clarification
    # (vdgr_core/query/confidence.py; 0 = never)
    min_confidence: float = Field(default=0.4, ge=0, le=1)
    # evidence tokens handed to an LLM answer after extractive compression (0 = no compression)
    context_budget_tokens: int = Field(default=600, ge=0)

    @field_validator("routes")
    @classmethod
    def _route_names(cls, routes: tuple[str, ...]) -> tuple[str, ...]:
        if not routes:
            raise ValueError("routes must name at least one route")
        bad = [r for r in routes if not _ROUTE_NAME.fullmatch(r)]
        if bad:
            raise ValueError(f"route names are lower-case words (a-z, 0-9, _): {bad}")
        return routes

    @model_validator(mode="before")
    @classmethod
    def _retired(cls, data):
        """Settings written before a field was retired still load: ``graph_m`` (the walk's
        node bound, read by nothing since the walk is bounded by ``graph_route.MAX_NODES``)."""
        if isinstance(data, dict) and "graph_m" in data:
            data = {k: v for k, v in data.items() if k != "graph_m"}
        return data

    @property
    def slices(self) -> QuerySlices:
        """Each component's typed, frozen slice of these settings (computed on access, so a
        ``model_copy(update=...)`` is reflected)."""
        g = self.guardrails
        return QuerySlices(
            retrieve=RetrieveSettings(self.k, tuple(self.routes), self.composition, self.named_first,
                                      self.copies_last, self.recall_tail, self.entry_first),
            routing=RoutingSettings(self.routing, self.routing_threshold, self.max_domains),
            fusion=FusionSettings(self.rrf_k, self.hybrid_fusion, self.route_fusion,
                                  tuple(self.route_weights.items()), self.reranker.top_n),
            graph=GraphSettings(self.graph_n, self.graph_beta, self.graph_keep_head, self.graph_synonym_min,
                                self.graph_keep_seeds),
            ann=AnnSettings(self.ann_nprobes, self.ann_refine_factor, self.ann_ef, self.exact_max_rows),
            toc=TocSettings(self.toc_coarse_l, self.toc_fine, self.toc_max_contents),
            expand=ExpandSettings(self.backtrack, self.backtrack_depth, self.reflection, self.reflection_rounds,
                                  self.reflection_bridge),
            answer=AnswerSettings(self.min_confidence, self.context_budget_tokens, g.screen_answers,
                                  g.min_support, tuple(g.phone_regions)),
        )


class GuardrailConfig(_Frozen):
    """Query screen (owner-extendable deny list) and answer screen (secrets, personal data,
    unsupported sentences)."""

    deny_list: tuple[str, ...] = ()
    screen_answers: bool = True
    min_support: float = Field(default=0.5, ge=0, le=1)
    # regions whose national phone formats the answer screen recognises (ISO 3166 codes;
    # international "+" numbers are recognised whatever these are)
    phone_regions: tuple[str, ...] = ("US", "GB", "DE", "FR", "RU")


QueryConfig.model_rebuild()
