"""Progress of a long build or update, told to the user while it runs.

The pipeline's steps count what they finish into the process's :data:`PROGRESS` (documents
parsed, texts queued for the model and texts embedded); :func:`reporting` prints a line every
few seconds while something moves: documents parsed out of the total, texts embedded out of those
known so far, the rate and an ETA. With the in-process runner the counts are this process's.
When the runner's workers are other processes on this machine (FnApiRunner with
``--direct_running_mode=multi_processing``, which a large hashing build chooses itself), the
driver names a folder in :data:`PROGRESS_DIR_ENV` before they start: each worker process writes
its counts there every second (:class:`WorkerPublisher`, one small file per process, replaced
whole) and the driver's lines add them up (:func:`worker_counts`). Workers on other machines
(Flink, Dataflow, external worker pools) report through their runner's own metrics only.
"""
from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional

#: the environment variable naming the folder worker processes write their counts to
PROGRESS_DIR_ENV = "VDGR_PROGRESS_DIR"
#: seconds between two writes of a worker's counts
PUBLISH_INTERVAL_S = 1.0


@dataclass(frozen=True)
class Snapshot:
    """The counts at one moment of a build (since :meth:`BuildProgress.start`)."""

    documents_total: int
    documents_parsed: int
    texts_queued: int
    texts_embedded: int
    embed_s: float            # since the first text was embedded

    @property
    def rate(self) -> Optional[float]:
        """Texts embedded per second since the first was, or None before two are."""
        return self.texts_embedded / self.embed_s if self.texts_embedded > 1 and self.embed_s > 0 else None

    @property
    def eta_s(self) -> Optional[float]:
        """Seconds left to embed: the texts still queued, plus those the unparsed documents
        will bring at the parsed ones' rate of texts per document."""
        rate = self.rate
        if rate is None or self.documents_parsed == 0:
            return None
        expected = self.texts_queued
        if self.documents_parsed < self.documents_total:
            expected = self.texts_queued * self.documents_total / self.documents_parsed
        return max(0.0, expected - self.texts_embedded) / rate


def plural(n: int, word: str, many: Optional[str] = None) -> str:
    """``1 document``, ``2 documents``, ``1,024 texts`` (``many``: an irregular plural)."""
    return f"{n:,d} {word if n == 1 else (many or word + 's')}"


def render(s: Snapshot) -> str:
    """One line, e.g. ``parsed 120 of 400 documents; embedded 3,200 of 5,100 texts (95 texts/s,
    ETA 1 min 10 s)``."""
    parts = [f"parsed {s.documents_parsed:,d} of {plural(s.documents_total, 'document')}"]
    if s.texts_queued:
        emb = f"embedded {s.texts_embedded:,d} of {plural(s.texts_queued, 'text')} known so far"
        if s.rate is not None:
            eta = s.eta_s
            emb += f" ({s.rate:,.1f} texts/s" + (f", ETA {_duration(eta)})" if eta is not None else ")")
        parts.append(emb)
    return "; ".join(parts)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    return f"{minutes // 60} h {minutes % 60} min"


class BuildProgress:
    """Thread-safe counters of one build in this process; :meth:`snapshot` adds the counts of
    worker processes while :func:`counting_workers` is active."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._on_count: Callable[[], None] = _publish_if_worker
        #: the (parsed, queued, embedded) counts of worker processes (:func:`worker_counts`)
        self._workers: Optional[Callable[[], tuple[int, int, int]]] = None
        self.start(0)

    def start(self, documents_total: int) -> None:
        with self._lock:
            self._total, self._parsed, self._queued, self._embedded = documents_total, 0, 0, 0
            self._first_embed = None

    def parsed(self, documents: int = 1) -> None:
        with self._lock:
            self._parsed += documents
        self._on_count()

    def queued(self, texts: int) -> None:
        with self._lock:
            self._queued += texts
        self._on_count()

    def embedded(self, texts: int) -> None:
        with self._lock:
            now = self._clock()
            if self._first_embed is None:
                # the rate counts from the first answer: the texts it held took their time before
                self._first_embed = now
            self._embedded += texts
            self._queued = max(self._queued, self._embedded)
        self._on_count()

    def counts(self) -> tuple[int, int, int]:
        """This process's own (parsed, queued, embedded) counts."""
        with self._lock:
            return self._parsed, self._queued, self._embedded

    def snapshot(self) -> Snapshot:
        others = self._workers() if self._workers is not None else (0, 0, 0)
        with self._lock:
            now = self._clock()
            parsed, queued, embedded = (self._parsed + others[0], self._queued + others[1],
                                        self._embedded + others[2])
            if self._first_embed is None and embedded:
                self._first_embed = now       # first seen in a worker's counts
            return Snapshot(self._total, parsed, max(queued, embedded), embedded,
                            now - self._first_embed if self._first_embed is not None else 0.0)


class WorkerPublisher:
    """Writes a worker process's counts to ``folder/<pid>.json`` every ``interval_s`` (a daemon
    thread; each write replaces the file whole, so a reader never sees half of one)."""

    def __init__(self, folder: str, progress: BuildProgress, interval_s: float = PUBLISH_INTERVAL_S):
        self._path = Path(folder) / f"{os.getpid()}.json"
        self._progress, self._interval_s = progress, interval_s
        self._last: Optional[tuple[int, int, int]] = None
        threading.Thread(target=self._loop, name="vdgr-progress-publisher", daemon=True).start()

    def write(self) -> None:
        counts = self._progress.counts()
        if counts == self._last:
            return
        tmp = self._path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(counts), encoding="utf-8")
            os.replace(tmp, self._path)
        except OSError:         # the driver removed the folder: the run is over
            return
        self._last = counts

    def _loop(self) -> None:
        while True:
            time.sleep(self._interval_s)
            self.write()


_PUBLISHER: Optional[WorkerPublisher] = None
_PUBLISHER_LOCK = threading.Lock()


def _publish_if_worker() -> None:
    """Start this process's :class:`WorkerPublisher` on its first count, when the driver that
    started it named a folder (:data:`PROGRESS_DIR_ENV`) and this process is not the driver."""
    global _PUBLISHER
    if _PUBLISHER is not None:
        return
    folder = os.environ.get(PROGRESS_DIR_ENV)
    if not folder or folder.startswith(f"{os.getpid()}:"):
        return
    with _PUBLISHER_LOCK:
        if _PUBLISHER is None:
            _PUBLISHER = WorkerPublisher(folder.partition(":")[2], PROGRESS)


def worker_counts(folder: str) -> tuple[int, int, int]:
    """The (parsed, queued, embedded) counts the worker processes wrote into ``folder``, summed."""
    total = [0, 0, 0]
    for path in Path(folder).glob("*.json"):
        try:
            counts = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):      # gone or replaced meanwhile: read at the next line
            continue
        for i in range(3):
            total[i] += int(counts[i])
    return total[0], total[1], total[2]


@contextlib.contextmanager
def counting_workers(progress: BuildProgress) -> Iterator[str]:
    """Within the block, worker processes this process starts write their counts to a fresh
    folder (its path in :data:`PROGRESS_DIR_ENV`, as ``<driver pid>:<folder>`` so the driver
    does not publish to itself), and ``progress``'s snapshots add them. Yields the folder."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="vdgr-progress-")
    previous = os.environ.get(PROGRESS_DIR_ENV)
    os.environ[PROGRESS_DIR_ENV] = f"{os.getpid()}:{folder}"
    progress._workers = lambda: worker_counts(folder)
    try:
        yield folder
    finally:
        progress._workers = None
        if previous is None:
            os.environ.pop(PROGRESS_DIR_ENV, None)
        else:
            os.environ[PROGRESS_DIR_ENV] = previous
        shutil.rmtree(folder, ignore_errors=True)


#: this process's build progress (one build at a time per process holds the index lock)
PROGRESS = BuildProgress()


@contextlib.contextmanager
def reporting(documents_total: int, say: Callable[[str], None], interval_s: float = 10.0,
              progress: BuildProgress = PROGRESS) -> Iterator[BuildProgress]:
    """Within the block, ``say`` a :func:`render` line every ``interval_s`` while the counts move."""
    progress.start(documents_total)
    stop = threading.Event()

    def loop() -> None:
        last = None
        while not stop.wait(interval_s):
            snap = progress.snapshot()
            key = (snap.documents_parsed, snap.texts_embedded, snap.texts_queued)
            if key != last and (snap.documents_parsed or snap.texts_queued):
                say(render(snap))
                last = key

    thread = threading.Thread(target=loop, name="vdgr-progress", daemon=True)
    thread.start()
    try:
        yield progress
    finally:
        stop.set()
        thread.join()


__all__ = ["BuildProgress", "PROGRESS", "PROGRESS_DIR_ENV", "Snapshot", "WorkerPublisher", "counting_workers",
           "plural", "render", "reporting", "worker_counts"]
