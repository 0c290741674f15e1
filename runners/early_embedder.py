"""Start the local embedding model in a child process at the very start of a command.

Loading all-MiniLM-L6-v2 takes ~3 s, mostly importing torch and transformers: Python work that,
on a thread of the command's own process, holds the interpreter lock against the imports, the
corpus scan and the parsing it should overlap (a measured build loaded it in 7.5 s that way).
A child process (``vdgr_core.embedding_process``) loads it truly in parallel; the in-process
pipeline and the driver then embed through it (``vdgr_core.indexing.model_home.provided_embedder``).

Stopping (:func:`stop_on_signals`): Ctrl-C or SIGTERM of ``vdgr index`` / ``vdgr update`` stops
every child at once and keeps what the child embedded (its journal) in the index's embedding
cache, so the next run embeds only the rest; a run killed without a handler leaves its journal,
which the next run adopts (:func:`adopt_journals`).
"""
from __future__ import annotations

import contextlib
import os
from typing import Iterator, Optional

from schemas.config import EmbedSettings


def _journal_path(embed: EmbedSettings) -> Optional[str]:
    """Where the child's vectors are journaled: a file in the index's staging folder (local
    indexes only; ``None`` for an object store)."""
    index = str(embed.index)
    if "://" in index:
        return None
    return os.path.join(index, "_staging", f"embedding-journal-{os.getpid()}.arrows")


@contextlib.contextmanager
def early_embedder(embed: EmbedSettings, wanted: bool) -> Iterator[Optional[object]]:
    """Within the block, ``process_embedder(embed.embedding)`` is a model loading in a child.

    Only for the local model and when ``wanted``; the child is stopped on exit (at once if it
    was never used). Yields the EmbedderProcess, or None. The child journals what it embeds
    (local indexes), for :func:`stop_on_signals` to keep; the journal is removed on exit.
    """
    if not wanted or embed.embedding.kind != "minilm":
        yield None
        return
    from vdgr_core.embedding_process import EmbedderProcess

    adopt_journals(embed)
    child = EmbedderProcess(embed.embedding, journal=_journal_path(embed))
    try:
        with child:
            from vdgr_core.indexing.model_home import provided_embedder

            with provided_embedder(embed.embedding, child):
                yield child
    finally:
        _remove(child.journal)


def _remove(path: Optional[str]) -> None:
    if path is not None and os.path.exists(path):
        os.remove(path)


def keep_embedded(embed: EmbedSettings, child) -> int:
    """Add what the stopped ``child`` journaled to the index's embedding cache; the keys offered.

    Called by the process that is the index's writer (it holds, or is about to take, the
    writer lock); the cache is never read through the manifest, so adding to it cannot change
    what a reader of the index sees.
    """
    from vdgr_core.embedding_process import read_journal
    from vdgr_core.indexing.embed_cache import append_to_cache

    rows = read_journal(child.journal) if child.journal else None
    if rows is None or rows.num_rows == 0:
        return 0
    return append_to_cache(str(embed.index), rows, child.dim)


def adopt_journals(embed: EmbedSettings) -> int:
    """Add to the embedding cache the journals of runs that were killed (SIGKILL, out of memory:
    no handler ran), then remove them; the keys offered. A journal whose process still runs is
    left alone; one that cannot be read or added is left for ``vdgr gc``."""
    import glob

    from vdgr_core.embedding import embedder_identity
    from vdgr_core.embedding_process import read_journal
    from vdgr_core.indexing.embed_cache import append_to_cache

    path = _journal_path(embed)
    if path is None:
        return 0
    added = 0
    for journal in glob.glob(os.path.join(os.path.dirname(path), "embedding-journal-*.arrows")):
        pid = journal.rsplit("-", 1)[-1].split(".", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            rows = read_journal(journal)
            if rows is not None and rows.num_rows:
                added += append_to_cache(str(embed.index), rows, embedder_identity(embed.embedding)[1])
            _remove(journal)
        except Exception:                  # a cache, never worth failing a build for
            continue
    return added


def _child_pids() -> list[int]:
    """This process's child processes (Linux: /proc; elsewhere the multiprocessing ones)."""
    import glob
    import multiprocessing

    pids: set[int] = set()
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        try:
            with open(path, encoding="ascii") as f:
                pids.update(int(p) for p in f.read().split())
        except (OSError, ValueError):
            continue
    pids.update(p.pid for p in multiprocessing.active_children() if p.pid)
    return sorted(pids)


def stop_children(grace_s: float = 1.5) -> None:
    """SIGTERM every child process, reap them, SIGKILL any still running after ``grace_s``."""
    import signal
    import time

    pids = _child_pids()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    waiting = set(pids)
    while waiting and time.monotonic() < deadline:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:          # reaped already (or not ours to reap)
                done = pid if not _alive(pid) else 0
            if done:
                waiting.discard(pid)
        if waiting:
            time.sleep(0.02)
    for pid in waiting:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # another user's process
        return True
    return True


@contextlib.contextmanager
def stop_on_signals(command: str, embed: EmbedSettings, child) -> Iterator[None]:
    """Within the block, Ctrl-C (SIGINT) or SIGTERM stops the command cleanly and at once.

    The child processes are stopped (SIGTERM, then SIGKILL after 1.5 s), the vectors the
    embedding child returned are added to the embedding cache (:func:`keep_embedded`: the next
    run does not embed them again), one line is printed, and the process exits with 128 +
    the signal number. Nothing is committed: the manifest is written last, so an index
    interrupted at any point is the previous one (the crash-safety tests kill builds at every
    commit phase). Main thread only; the previous handlers are restored on exit.
    """
    import signal
    import sys
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
        stop_children()
        kept = 0
        if child is not None:
            try:
                child.close()
                kept = keep_embedded(embed, child)
                _remove(child.journal)
            except Exception as e:               # the line still comes; the cache is an optimisation
                os.write(2, f"vdgr {command}: could not keep the embedded texts: {e}\n".encode("utf-8"))
        line = (interrupted_line(command, kept) + "\n").encode("utf-8")
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.write(2, line)            # not through sys.stderr: the signal may have cut a write to it
        os._exit(128 + signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def interrupted_line(command: str, kept: int) -> str:
    """The one line an interrupted ``command`` prints (``kept``: embedded texts kept)."""
    from vdgr_core.progress import plural

    if kept:
        return (f"vdgr {command}: stopped; nothing committed, {plural(kept, 'embedded text')} kept in "
                "the embedding cache for the next run")
    return f"vdgr {command}: stopped; nothing committed"


__all__ = ["adopt_journals", "early_embedder", "interrupted_line", "keep_embedded",
           "stop_children", "stop_on_signals"]
