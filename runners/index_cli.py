"""`vdgr index`: build an index from a corpus folder."""
from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import sys
from typing import Optional

from pipelines.options import runs_in_this_process
from runners.early_embedder import early_embedder, stop_on_signals
from runners.presets import PRESETS, apply_preset
from schemas import tables as T
from schemas.config import BuildConfig, ChunkingConfig, EmbeddingConfig, LLMConfig
from vdgr_core.embedding import resolve_precision
from vdgr_core.progress import plural


def add_build_arguments(p: argparse.ArgumentParser, *, recorded_defaults: bool = False) -> None:
    """The corpus, index, runner and build-settings flags.

    ``recorded_defaults`` (update, watch): a settings flag left out means "as recorded in the
    index", so its default is None here and :func:`update_config` fills it in.
    """
    def default(value):
        return None if recorded_defaults else value

    note = " (default: as recorded in the index)" if recorded_defaults else ""
    p.add_argument("corpus", help="corpus folder (one sub-folder per domain)")
    p.add_argument("--index", required=True, help="index folder to write")
    p.add_argument("--preset", choices=sorted(PRESETS), default="auto",
                   help="runner preset (auto: in-process, or a worker process per core for a large build"
                        " with no local model); any standard Beam flag given as well wins")
    p.add_argument("--chunk-tokens", type=int, default=default(ChunkingConfig().max_tokens), help=note or None)
    p.add_argument("--overlap-tokens", type=int, default=None,
                   help="overlap between chunks (default: 7%% of --chunk-tokens)" + note)
    p.add_argument("--embedding", choices=["minilm", "hashing", "openai"], default=default("minilm"),
                   help=note or None)
    p.add_argument("--embedding-base-url")
    p.add_argument("--embedding-model")
    p.add_argument("--embedding-dim", type=int, default=default(EmbeddingConfig().dim),
                   help="vector dimension (must match what --embedding-model returns; default 384)" + note)
    p.add_argument("--batch-size", type=int, default=default(EmbeddingConfig().batch_size), help=note or None)
    p.add_argument("--embedding-precision", choices=["auto", "fp32", "bf16", "int8"], default=default("auto"),
                   help="numerics of the local model's stored vectors; auto: bf16 where the CPU computes it "
                        "natively (AVX512-BF16 or AMX), else int8 on x86 with AVX2, else fp32; int8: weight "
                        "products in int8 (faster, vectors within 3e-3 cosine of fp32); the index records "
                        "what it resolved to"
                        + note)
    p.add_argument("--title-entities", action=argparse.BooleanOptionalAction, default=default(True),
                   help="link every chunk to the entities its section title names (default: on)" + note)
    p.add_argument("--llm-base-url", help="OpenAI-compatible endpoint for summaries/entities")
    p.add_argument("--llm-model")
    p.add_argument("--llm-cache", help="sqlite file caching LLM answers")
    add_lock_timeout_argument(p)
    p.add_argument("--llm-structured-output", choices=("json_schema", "json_object"), default="json_schema",
                   help="how structured replies are requested (json_object: llama.cpp's server)")
    p.add_argument("-q", "--quiet", action="store_true")


def add_lock_timeout_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lock-timeout", type=float, default=0.0, metavar="SECONDS",
                   help="wait this long for another index, update or gc of the same index to finish "
                        "(default 0: exit at once, naming the other writer)")


def _overlap(chunk_tokens: int) -> int:
    return max(1, round(chunk_tokens * 0.07))


def build_config(args) -> BuildConfig:
    overlap = args.overlap_tokens
    if overlap is None:
        overlap = _overlap(args.chunk_tokens)
    llm = None
    if args.llm_base_url:
        llm = LLMConfig(base_url=args.llm_base_url, model=args.llm_model or "default",
                        cache_path=args.llm_cache, structured_output=args.llm_structured_output)
    return BuildConfig(
        corpus=args.corpus, index=args.index,
        chunking=ChunkingConfig(max_tokens=args.chunk_tokens, overlap_tokens=overlap),
        embedding=resolve_precision(EmbeddingConfig(
            kind=args.embedding, base_url=args.embedding_base_url, model=args.embedding_model,
            dim=args.embedding_dim, batch_size=args.batch_size, precision=args.embedding_precision)),
        llm=llm,
        title_entities=args.title_entities,
        **_execution_settings(args),
    )


def _execution_settings(args) -> dict:
    """How this run executes (not build settings: never recorded, never compared)."""
    out = {"lock_timeout_s": args.lock_timeout}
    if getattr(args, "in_driver_max_documents", None) is not None:
        out["update_in_driver_max_documents"] = args.in_driver_max_documents
    return out


def update_config(args, recorded: Optional[dict]) -> BuildConfig:
    """The configuration of an update: the ``recorded`` settings of the index, with only the
    settings flags the user gave changed (all flags' defaults when there is no index yet).

    Raises
    ------
    ConfigError
        When the recorded settings cannot be read back by this version.
    """
    from pydantic import ValidationError

    from schemas.errors import ConfigError

    if recorded is None:
        defaults = {"chunk_tokens": ChunkingConfig().max_tokens, "embedding": "minilm",
                    "embedding_dim": EmbeddingConfig().dim, "batch_size": EmbeddingConfig().batch_size,
                    "embedding_precision": "auto",
                    "title_entities": BuildConfig.model_fields["title_entities"].default}
        given = {k: v for k, v in vars(args).items() if v is not None}
        return build_config(argparse.Namespace(**{**vars(args), **defaults, **given}))
    try:
        base = BuildConfig.from_settings(recorded, corpus=args.corpus, index=args.index,
                                         **_execution_settings(args))
    except ValidationError as e:
        raise ConfigError("the build settings recorded in the index are not readable by this version; "
                          f"give the settings flags and --new-settings to rebuild ({e})") from None
    chunking, embedding, llm = base.chunking, base.embedding, base.llm
    if args.chunk_tokens is not None or args.overlap_tokens is not None:
        tokens = args.chunk_tokens if args.chunk_tokens is not None else chunking.max_tokens
        overlap = args.overlap_tokens
        if overlap is None:
            overlap = _overlap(tokens) if args.chunk_tokens is not None else chunking.overlap_tokens
        chunking = ChunkingConfig(max_tokens=tokens, overlap_tokens=overlap)
    changed = {name: value for name, value in (
        ("kind", args.embedding), ("base_url", args.embedding_base_url), ("model", args.embedding_model),
        ("dim", args.embedding_dim), ("batch_size", args.batch_size),
        ("precision", getattr(args, "embedding_precision", None))) if value is not None}
    if changed:
        embedding = resolve_precision(EmbeddingConfig(**{**embedding.model_dump(), **changed}))
    if args.llm_base_url:
        llm = LLMConfig(base_url=args.llm_base_url, model=args.llm_model or "default", cache_path=args.llm_cache)
    elif llm is not None and (args.llm_model or args.llm_cache):
        llm = llm.model_copy(update={k: v for k, v in (("model", args.llm_model), ("cache_path", args.llm_cache))
                                     if v})
    title_entities = base.title_entities if args.title_entities is None else args.title_entities
    return base.model_copy(update={"chunking": chunking, "embedding": embedding, "llm": llm,
                                   "title_entities": title_entities})


def register(subparsers) -> None:
    p = subparsers.add_parser("index", help="build an index (Apache Beam pipeline)",
                              description="Unknown --flags are passed to Beam as pipeline options.")
    add_build_arguments(p)
    p.set_defaults(func=run, accepts_beam_args=True)


def print_report(report, out=None) -> None:
    out = out if out is not None else sys.stdout   # looked up per call (stdout may be replaced)
    m = report.manifest
    print(f"\nindex {m.build_id} committed in {report.wall_s:.1f} s", file=out)
    print("  rows in the index, per table:", file=out)
    for name, rows in sorted(report.rows.items()):
        print(f"  {name:<14}{rows:>9,d} {'row' if rows == 1 else 'rows'}", file=out)
    writes = report.update_writes
    if writes is None:          # a build reads every file: its dead letters are the index's
        print(f"  dead letters  {report.dead_letters:>9,d} of {plural(report.documents_seen, 'file')}", file=out)
    else:                       # an update reads the files that changed; the index keeps the others'
        new = writes.added.get(T.DEAD_LETTERS, 0)
        print(f"  dead letters  {report.dead_letters:>9,d} in the index; {new:,d} of the "
              f"{plural(report.documents_seen, 'file')} this update read", file=out)
    print(f"  embeddings    {report.embeddings_computed:>9,d} computed, "
          f"{report.embeddings_from_cache:,d} from cache", file=out)
    print(f"  BM25 shards   {len(m.tantivy_shards):>9,d}", file=out)
    if report.secret_findings:
        print(f"  secrets       {report.secret_findings:>9,d} masked (table secret_findings: document,"
              " line, kind; rotate them)", file=out)
    if report.llm_calls or report.llm_fallbacks:
        print(f"  LLM requests  {report.llm_calls:>9,d}", file=out)
    if report.llm_fallbacks:
        print(f"  LLM fallbacks {report.llm_fallbacks:>9,d} (LLM failed; offline summary/terms used,"
              " see the log)", file=out)
    stages = ", ".join(f"{k} {v:.1f}" for k, v in report.stage_s.items())
    print(f"  stages (s)    {stages}", file=out)


def run(args, beam_args) -> int:
    from schemas.errors import VdgrError

    setup_logging(args.quiet)
    try:
        config = build_config(args)
        beam_args = apply_preset(args.preset, beam_args)
        # in-process runs embed through a model that starts loading now, in a child process;
        # Ctrl-C or SIGTERM stops the children and keeps what was embedded for the next run
        with early_embedder(config.slices.embed, wanted=runs_in_this_process(beam_args)) as child, \
                stop_on_signals("index", config.slices.embed, child):
            from pipelines.run_build import run_build

            with fewer_full_collections():
                report = run_build(config, beam_args, progress=progress_printer(args.quiet))
    except (VdgrError, ValueError) as exc:
        print(f"vdgr index: error: {exc}", file=sys.stderr)
        return 2
    print_report(report)
    return 0


@contextlib.contextmanager
def fewer_full_collections():
    """Within the block, the garbage collector rarely walks every live object.

    What is alive on entry (mostly imported modules, ~230k objects) is frozen out of the
    collector's sight, and the oldest generation is examined after 100 collections of the middle
    one instead of 10. A build allocates millions of objects and keeps many of them (chunks,
    rows, the model's ~300k): with the defaults the collector took 2.3 s of the EManual build
    with the local model, ~0.6 s with this. Thresholds are restored and objects unfrozen on exit.
    """
    young, middle, old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(young, middle, max(old, 100))
    try:
        yield
    finally:
        gc.set_threshold(young, middle, old)
        gc.unfreeze()


def progress_printer(quiet: bool):
    """The ``say`` callback of a command: ``[vdgr] line`` on stderr, nothing when ``quiet``."""
    def say(line: str) -> None:
        if not quiet:
            print(f"[vdgr] {line}", file=sys.stderr, flush=True)
    return say


class _ThirdPartyNotices(logging.Filter):
    """Drops warnings that libraries log on the root logger about themselves (Beam's "apitools
    not found ..." at every import): nothing the user asked for, nothing to act on. Errors,
    and every record of a named logger (ours and Beam's own), still pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and record.levelno < logging.ERROR
                    and "site-packages" in record.pathname)


def setup_logging(quiet: bool) -> None:
    """Logging of a command: warnings on stderr (libraries' notices about themselves dropped),
    ``vdgr`` info lines unless ``quiet``."""
    logging.basicConfig(level=logging.WARNING, format="[%(name)s] %(message)s")
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _ThirdPartyNotices) for f in handler.filters):
            handler.addFilter(_ThirdPartyNotices())
    logging.getLogger("vdgr").setLevel(logging.WARNING if quiet else logging.INFO)
