"""``vdgr query``: answer questions from an index (one question, or a JSONL batch)."""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from schemas.config import EmbeddingConfig, GuardrailConfig, LLMConfig, QueryConfig, RerankerConfig
from schemas.errors import VdgrError

ROUTES = ("bm25", "dense", "hybrid", "toc", "graph")     # the built-in routes (vdgr_core/query/routes/)


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``query`` subcommand to an argparse ``subparsers`` object."""
    p = subparsers.add_parser("query", help="answer questions from an index",
                              description="Answer a question (or a JSONL batch) from a VDGR index.")
    p.add_argument("question", nargs="?", help="the question (omit with --questions)")
    p.add_argument("--index", required=True, help="index folder")
    p.add_argument("--domain", help="search only this domain")
    p.add_argument("--version", help="search only this product version")
    p.add_argument("--groups", default="", help="comma-separated access groups of the user")
    p.add_argument("--json", action="store_true", help="print the result object as JSON")
    p.add_argument("--explain", action="store_true", help="print the trace (timings, decisions)")
    add_model_options(p)
    p.add_argument("--questions", help="JSONL input, one {id, question, ...} per line")
    p.add_argument("--out", help="JSONL output for --questions (default: stdout)")
    p.set_defaults(func=run)
    return p


def add_model_options(p: argparse.ArgumentParser) -> None:
    """The query configuration options shared by ``vdgr query`` and ``vdgr serve``."""
    p.add_argument("--k", type=int, default=None, help="evidence items to return (default 10)")
    p.add_argument("--routes", default=None, help="comma-separated routes: " + ",".join(ROUTES))
    p.add_argument("--composition", choices=("parallel", "sequential"), default=None)
    p.add_argument("--backtrack", action="store_true", help="widen weak evidence through the TOC (off by default)")
    p.add_argument("--no-backtrack", action="store_true", help="(the default) no backtracking")
    p.add_argument("--reflection", action="store_true", help="judge the evidence and search again when it "
                   "falls short (off by default offline; see BENCHMARKS.md, ablation)")
    p.add_argument("--no-reflection", action="store_true", help="(the default) no reflection")
    p.add_argument("--no-routing", action="store_true")
    p.add_argument("--embedding", choices=("minilm", "hashing", "openai"), default=None,
                   help="embedder kind (default: the kind the index was built with)")
    p.add_argument("--embedding-dim", type=int, default=None)
    p.add_argument("--embedding-model-path", default=None)
    p.add_argument("--llm-base-url", default=None)
    p.add_argument("--llm-model", default=None)
    p.add_argument("--llm-api-key", default="not-needed")
    p.add_argument("--llm-cache", default=None, help="sqlite file for the LLM cache")
    p.add_argument("--llm-structured-output", choices=("json_schema", "json_object"), default="json_schema",
                   help="how structured replies are requested (json_object: llama.cpp's server)")
    p.add_argument("--reranker", choices=("none", "section", "cross_encoder", "llm"), default=None,
                   help="re-rank route 1's sections (default none; section: offline section re-scoring)")
    p.add_argument("--reranker-model-path", default=None, help="local cross-encoder folder (--reranker cross_encoder)")
    p.add_argument("--deny-list", help="file of blocked words or phrases, one per line (query screen)")


def query_config(args, manifest) -> QueryConfig:
    """The :class:`QueryConfig` the parsed ``add_model_options`` flags ask for, on the
    embedding the index ``manifest`` records (flags name ``QueryConfig`` fields)."""
    emb = EmbeddingConfig.for_index(manifest.embedding_model, manifest.dim, kind=args.embedding,
                                    dim=args.embedding_dim, model_path=args.embedding_model_path)
    llm = None
    if args.llm_base_url or args.llm_model:
        if not (args.llm_base_url and args.llm_model):
            raise VdgrError("--llm-base-url and --llm-model go together")
        llm = LLMConfig(base_url=args.llm_base_url, model=args.llm_model, api_key=args.llm_api_key,
                        cache_path=args.llm_cache, structured_output=args.llm_structured_output)
    extra = {}
    if args.routes:
        routes = tuple(r.strip() for r in args.routes.split(",") if r.strip())
        from vdgr_core.query.routes import REGISTRY

        bad = [r for r in routes if r not in REGISTRY]
        if bad or not routes:
            raise VdgrError(f"unknown route(s) {bad}; choose from {', '.join(sorted(REGISTRY))}")
        extra["routes"] = routes
    if args.k is not None:
        extra["k"] = args.k
    if args.composition:
        extra["composition"] = args.composition
    if getattr(args, "reranker", None):
        extra["reranker"] = RerankerConfig(kind=args.reranker, model_path=args.reranker_model_path)
    if args.deny_list:
        with open(args.deny_list, encoding="utf-8") as f:
            terms = tuple(t.strip() for t in f if t.strip() and not t.startswith("#"))
        extra["guardrails"] = GuardrailConfig(deny_list=terms)
    if args.backtrack and not args.no_backtrack:
        extra["backtrack"] = True
    elif args.no_backtrack:
        extra["backtrack"] = False
    if args.reflection and not args.no_reflection:
        extra["reflection"] = True
    elif args.no_reflection:
        extra["reflection"] = False
    return QueryConfig(embedding=emb, llm=llm,
                       routing=not args.no_routing, **extra)


def run(args) -> int:
    """Run the ``query`` subcommand; return the exit status (0 ok, 2 usage or index error)."""
    from vdgr_core.query.knowledge_base import KnowledgeBase
    from vdgr_core.query.questions import read_questions
    from vdgr_core.query.trace import render_text
    from vdgr_core.store.manifest import read_manifest

    try:
        if bool(args.question) == bool(args.questions):
            raise VdgrError("give either a question or --questions FILE")
        kb = KnowledgeBase.open(args.index, query_config(args, read_manifest(args.index)))
        groups = [g.strip() for g in (args.groups or "").split(",") if g.strip()]
        if args.questions:
            with open(args.questions, "rb") as f:
                items = read_questions(f, args.questions)
            results = kb.query_batch(items, k=args.k)
            lines = "".join(r.model_dump_json() + "\n" for r in results)
            if args.out:
                with open(args.out, "w", encoding="utf-8") as f:
                    f.write(lines)
            else:
                sys.stdout.write(lines)
            return 0
        result = kb.query(args.question, domain=args.domain, version=args.version, groups=groups, k=args.k)
    except (VdgrError, ValueError, OSError) as exc:
        print(f"vdgr query: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(render_text(result, explain=args.explain))
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Standalone entry point: ``python -m runners.query_cli query --index DIR "question"``."""
    parser = argparse.ArgumentParser(prog="vdgr")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
