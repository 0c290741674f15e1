"""Progress of a long build or update, told to the user while it runs.

The pipeline's steps count what they finish into the process's :data:`PROGRESS` (documents
parsed, texts queued for the model and texts embedded); :func:`reporting` prints a line every
few seconds while something moves: documents parsed out of the total, texts embedded out of those
known so far, the rate and an ETA. The counts are those of the runner's workers in this process
(FnApiRunner, the default): a runner whose workers are other processes reports through Beam's
own metrics instead, and these lines then show nothing.
"""
from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional


@dataclass(frozen=True)
class Snapshot:
    """The counts at one moment (``elapsed_s`` since :meth:`BuildProgress.start`)."""

    documents_total: int
    documents_parsed: int
    texts_queued: int
    texts_embedded: int
    elapsed_s: float
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
    """Thread-safe counters of one build in this process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self.start(0)

    def start(self, documents_total: int) -> None:
        with self._lock:
            self._total, self._parsed, self._queued, self._embedded = documents_total, 0, 0, 0
            self._t0, self._first_embed = self._clock(), None

    def parsed(self, documents: int = 1) -> None:
        with self._lock:
            self._parsed += documents

    def queued(self, texts: int) -> None:
        with self._lock:
            self._queued += texts

    def embedded(self, texts: int) -> None:
        with self._lock:
            now = self._clock()
            if self._first_embed is None:
                # the rate counts from the first answer: the texts it held took their time before
                self._first_embed = now
            self._embedded += texts
            self._queued = max(self._queued, self._embedded)

    def snapshot(self) -> Snapshot:
        with self._lock:
            now = self._clock()
            return Snapshot(self._total, self._parsed, self._queued, self._embedded, now - self._t0,
                            now - self._first_embed if self._first_embed is not None else 0.0)


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


__all__ = ["BuildProgress", "PROGRESS", "Snapshot", "plural", "render", "reporting"]
