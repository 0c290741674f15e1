"""Run a full build end to end: scan, Beam pipeline, commit. Returns counts to assert on."""
from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import DirectOptions

from pipelines.build import build_pipeline, chunk_texts
from pipelines.local_workers import local_worker_run
from pipelines.metrics import beam_counter
from pipelines.options import (auto_runner_args, check_job_endpoint, local_worker_processes, names_runner,
                               pipeline_options, runs_in_this_process, use_filesystem_options)
from pipelines.staging import Staging
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig, EmbedSettings, ParseSettings
from schemas.errors import PipelineFailedError, RunnerUnavailableError
from schemas.records import DeadLetter
from transforms.read import open_read
from vdgr_core.corpus import CorpusScan, scan_corpus
from vdgr_core.embedding import embedder_identity, resolve_precision
from vdgr_core.ids import stable_id
from vdgr_core.indexing.document import load_document
from vdgr_core.indexing.model_home import prefetcher_for, process_embedder
from vdgr_core.memory import release_unused_memory
from vdgr_core.progress import plural, reporting
from vdgr_core.safety import content_rules
from vdgr_core.store.failpoints import failpoint
from vdgr_core.store.location import is_remote
from vdgr_core.store.lock import IndexLock
from vdgr_core.store.manifest import CommitGuard, Manifest

_log = logging.getLogger("vdgr.build")


@dataclass(frozen=True)
class BuildReport:
    """What a build did: the manifest it committed and the figures a user checks."""

    manifest: Manifest
    rows: dict[str, int]
    dead_letters: int
    documents_seen: int
    embeddings_computed: int
    embeddings_from_cache: int
    wall_s: float
    # scan_s, pipeline_s, commit_s; index_segments_s: the part of commit_s that built the index
    # segments (on the runner's workers, or in this process for the in-process runner)
    stage_s: dict[str, float] = field(default_factory=dict)
    # LLM requests sent (cache hits excluded) and chunks/directories whose LLM call failed
    # permanently and got the offline annotation instead; 0 without an LLM, -1 when the runner
    # reports no metrics.
    llm_calls: int = 0
    llm_fallbacks: int = 0
    # rows of the secret_findings table: credentials masked in the indexed documents
    secret_findings: int = 0
    # an update: rows each table lost and gained (pipelines.delta_update.UpdateWrites)
    update_writes: Optional[object] = None


def with_precision(config: BuildConfig, recorded: Optional[dict] = None) -> BuildConfig:
    """``config`` with an ``"auto"`` embedding precision made concrete: the precision the
    ``recorded`` settings of an index name (an update keeps the index's vectors on any host),
    else this host's (:func:`vdgr_core.embedding.resolve_precision`)."""
    if config.embedding.precision != "auto":
        return config
    if recorded:
        kept = BuildConfig.from_settings(recorded, corpus=config.corpus, index=config.index).embedding
        if kept.kind == config.embedding.kind and kept.precision != "auto":
            return config.model_copy(update={"embedding": config.embedding.model_copy(
                update={"precision": kept.precision})})
    return config.model_copy(update={"embedding": resolve_precision(config.embedding)})


def run_build(config: BuildConfig, beam_args: Sequence[str] = (),
              progress: Optional[Callable[[str], None]] = None) -> BuildReport:
    """Build the index of ``config.corpus`` into ``config.index``.

    Parameters
    ----------
    beam_args:
        Standard Beam pipeline options (``--runner=...``); FnApiRunner when none is given.
    progress:
        Called with a line of text at each stage.

    Raises
    ------
    IndexBusyError
        When another build, update or gc holds the index after ``config.lock_timeout_s``.
    """
    say = progress or (lambda s: _log.info(s))
    t0 = time.perf_counter()
    config = with_precision(config)
    use_filesystem_options(beam_args)
    with IndexLock(config.index, "vdgr index", config.lock_timeout_s) as lock:
        say(f"scanning {config.corpus}")
        scan = scan_corpus(config.corpus, max_depth=config.limits.max_folder_depth)
        outside = len(scan.outside_domains)
        say(f"found {plural(len(scan.tasks), 'document')} in "
            f"{plural(len({t.domain for t in scan.tasks}), 'domain')}"
            f" ({plural(len(scan.skipped) - len(scan.rejected) - outside, 'file')} of unsupported types,"
            + (f" {outside:,d} outside every domain folder," if outside else "")
            + f" {len(scan.rejected):,d} refused by the scan)")
        return execute_build(config, scan, beam_args, say, guard=lock, t0=t0)


def warm_embedder_in_background(embedding: EmbeddingConfig) -> None:
    """Load the embedding model while the pipeline parses (in-process runner, full builds).

    The embedding step takes the process-wide embedder (vdgr_core/indexing/model_home.py);
    loading it on a thread here overlaps the ~3 s load with parsing instead of stalling the
    embedding stage. An update skips this: most of its texts are cached and it may need no model.
    """
    import threading

    threading.Thread(target=process_embedder, args=(embedding,), name="vdgr-warm-embedder",
                     daemon=True).start()


#: chunk texts the driver sends the embedding child before the pipeline starts (~2 s of work
#: for the child on 2 AVX2 cores: the pipeline's first texts reach it ~1.2 s after it loaded)
FIRST_TEXTS = 256


def send_first_texts(parse: ParseSettings, embed: EmbedSettings, scan: CorpusScan, model_id: str,
                     texts: int = FIRST_TEXTS) -> int:
    """Parse the scan's first documents here and send their chunk texts to the embedding child;
    the texts sent (0 without a child: see ``vdgr_core.indexing.model_home.prefetcher_for``).

    The child has loaded its model ~1.2 s before the in-process pipeline, still being
    constructed and translated by Beam, sends it anything (hand timelines, docs/DECISIONS.md).
    A cache only: the pipeline parses the same documents again and takes these vectors, and a
    document that cannot be parsed is left to the pipeline's dead-letter output.
    """
    prefetcher = prefetcher_for(embed)
    if prefetcher is None:
        return 0
    sent = 0
    for task in scan.tasks:
        if sent >= texts:
            break
        doc = load_document(task, parse, open_read, FileSystems.join)
        if isinstance(doc, DeadLetter):
            continue
        for key, text in chunk_texts(doc, model_id):
            prefetcher.offer(key, text)
            sent += 1
    prefetcher.flush()
    return sent


def import_commit_in_background() -> None:
    """Import the commit's modules (LanceDB: ~1.4 s of Python) while the pipeline runs.

    The driver needs them only once the pipeline ends; imported then, they lengthen the serial
    tail. While the model embeds, the pipeline thread mostly waits, so the import costs nothing.
    An import another thread needs meanwhile waits on Python's module lock for this one.
    """
    import importlib
    import threading

    threading.Thread(target=importlib.import_module, args=("pipelines.commit",),
                     name="vdgr-import-commit", daemon=True).start()


@contextlib.contextmanager
def staged_pipeline_run(index: str, beam_args: Sequence[str], add_steps: Callable[[beam.Pipeline, Staging], None],
                        *, warm_embedder: Optional[EmbeddingConfig]) -> Iterator[tuple[Staging, object]]:
    """Run the pipeline ``add_steps(p, staging)`` builds, writing under a fresh staging area.

    Yields (staging, pipeline result) for the driver to read back; the staging area is removed
    afterwards, whatever happens. ``warm_embedder``: the model to load on a thread while the
    in-process runner parses (a no-op when a provided embedder is already there; None: none).
    """
    staging = Staging.new(index, stable_id("run", str(os.getpid()), str(time.time_ns()))[:12])
    try:
        options = pipeline_options(beam_args)
        if warm_embedder is not None and runs_in_this_process(beam_args):
            warm_embedder_in_background(warm_embedder)
        p = beam.Pipeline(options=options)
        add_steps(p, staging)
        import_commit_in_background()
        result = run_to_end(p)
        yield staging, result
    finally:
        staging.remove()


def run_to_end(p: beam.Pipeline):
    """Run ``p`` and wait for it; its result. Worker processes on this machine get their options,
    counts and standard error (pipelines/local_workers.py); a portable runner's failed job
    raises :class:`PipelineFailedError`, said in two lines; a runner that cannot start here, or
    a job endpoint that does not answer (:func:`check_job_endpoint`), raises
    :class:`RunnerUnavailableError`."""
    around = local_worker_run(p.options) if local_worker_processes(p.options) else contextlib.nullcontext()
    check_job_endpoint(p.options)
    try:
        with around:
            result = p.run()
            result.wait_until_finish()
    except RuntimeError as exc:     # a portable runner's job ended FAILED, or its job server did not start
        if "failed in state" in str(exc):
            raise PipelineFailedError(job_failure(exc)) from exc
        if runner_unavailable(exc):
            raise RunnerUnavailableError(runner_failure(exc)) from exc
        raise
    except ImportError as exc:      # DataflowRunner without apache-beam[gcp]
        if not runner_unavailable(exc):
            raise
        raise RunnerUnavailableError(runner_failure(exc)) from exc
    return result


#: what Beam 2.77 says when a runner cannot start: FlinkRunner (any runner of a Java job server)
#: cannot get its job server jar (``subprocess_server.JavaJarServer.local_jar``: Maven Central
#: unreachable, no local copy) or finds no Java, or DataflowRunner lacks its extra
#: (``dataflow_runner.py``)
_RUNNER_CANNOT_START = ("Unable to fetch remote job server jar", "Java must be installed",
                        "Java is not correctly installed", "runner not available, please install")


def runner_unavailable(exc: BaseException) -> bool:
    return any(s in str(exc) for s in _RUNNER_CANNOT_START)


def runner_failure(exc: BaseException) -> str:
    """Why the runner did not start (Beam's own words: the jar's URL and where to put a copy),
    then what it means for the index and where the runners are described."""
    said = " ".join(str(exc).split())
    hint = (" (give a local copy of that jar with --flink_job_server_jar=PATH, or a running job server with"
            " --runner=PortableRunner --job_endpoint=HOST:PORT; docs/RUNNERS.md)" if "job server jar" in said else "")
    return f"the runner could not start: {said}; no job ran and nothing was committed{hint}"


def job_failure(exc: BaseException) -> str:
    """A portable runner's job failure in two lines: its first (job and state) and its last
    (the error a worker or the runner raised), then what it means for the index."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    said = lines[0] if len(lines) < 2 else f"{lines[0]} ... {lines[-1]}"
    return f"{said}; nothing was committed (the index still names its previous build): run it again"


def execute_build(config: BuildConfig, scan: CorpusScan, beam_args: Sequence[str],
                  say: Callable[[str], None], *, guard: Optional[CommitGuard],
                  parent_build_id: Optional[str] = None, t0: Optional[float] = None) -> BuildReport:
    """Run the pipeline over ``scan`` and commit (``parent_build_id``: the index it replaces;
    ``guard``: the held index lock, which the commit passes to ``write_manifest``)."""
    t0 = time.perf_counter() if t0 is None else t0
    if not is_remote(config.index):
        os.makedirs(config.index, exist_ok=True)
    stage: dict[str, float] = {}
    skipped = [scan.dead_letter(p) for p in scan.skipped]
    model_id, dim = embedder_identity(config.embedding)
    stage["scan_s"] = time.perf_counter() - t0

    if not names_runner(beam_args):
        beam_args = auto_runner_args(beam_args, documents=len(scan.tasks),
                                     local_model=config.embedding.kind == "minilm",
                                     remote=is_remote(config.index) or is_remote(config.corpus))
        options = pipeline_options(beam_args)
        if local_worker_processes(options):
            say(f"{plural(len(scan.tasks), 'document')} and no local model: running on "
                f"{options.view_as(DirectOptions).direct_num_workers} worker processes (--preset direct keeps one)")
    say("running the indexing pipeline (parse, chunk, annotate, merge, summarize, embed)")
    t1 = time.perf_counter()
    def add_steps(p, staging):
        in_process = runs_in_this_process(beam_args)
        if in_process:
            send_first_texts(config.slices.parse, config.slices.embed, scan, model_id, FIRST_TEXTS)
        build_pipeline(p, config, scan, model_id=model_id, dim=dim, staging=staging, dead_from_scan=skipped,
                       embed_last=in_process)

    with reporting(len(scan.tasks), say), staged_pipeline_run(
            config.index, beam_args, add_steps,
            warm_embedder=config.embedding if parent_build_id is None else None) as (staging, result):
        stage["pipeline_s"] = time.perf_counter() - t1
        release_unused_memory()
        failpoint("commit.staged")
        failpoint("commit.shards_published")     # the pipeline publishes the shards
        failpoint("commit.layouts_published")    # and the layouts
        say("committing tables, indexes and manifest")
        t2 = time.perf_counter()
        from pipelines.commit import commit_build
        from pipelines.index_segments import segment_builder

        builder = segment_builder(beam_args, staging.root)

        def build_segments(index_uri, tasks):      # timed: on a runner of workers, their share of the commit
            t = time.perf_counter()
            try:
                return builder(index_uri, tasks)
            finally:
                stage["index_segments_s"] = time.perf_counter() - t

        manifest = commit_build(config.index, staging, scan, config.store, config.settings(content_rules()), model_id=model_id,
                                dim=dim, guard=guard,
                                parent_build_id=parent_build_id,
                                build_segments=build_segments)
        stage["commit_s"] = time.perf_counter() - t2
    return BuildReport(
        manifest=manifest,
        rows=dict(manifest.counts),
        dead_letters=manifest.counts[T.DEAD_LETTERS],
        documents_seen=len(scan.tasks) + len(skipped),
        embeddings_computed=beam_counter(result, "embeddings_computed"),
        embeddings_from_cache=beam_counter(result, "embeddings_from_cache"),
        wall_s=time.perf_counter() - t0,
        stage_s=stage,
        llm_calls=beam_counter(result, "llm_calls"),
        llm_fallbacks=beam_counter(result, "llm_fallbacks"),
        secret_findings=manifest.counts.get(T.SECRET_FINDINGS, 0),
    )


