"""Start the local embedding model in a child process at the very start of a command.

Loading all-MiniLM-L6-v2 takes ~3 s, mostly importing torch and transformers: Python work that,
on a thread of the command's own process, holds the interpreter lock against the imports, the
corpus scan and the parsing it should overlap (a measured build loaded it in 7.5 s that way).
A child process (``vdgr_core.embedding_process``) loads it truly in parallel; the in-process
pipeline and the driver then embed through it (``transforms.embed.provided_embedder``).
"""
from __future__ import annotations

import contextlib
from typing import Iterator, Optional, Sequence

from schemas.config import BuildConfig

_IN_PROCESS_RUNNERS = ("FnApiRunner", "DirectRunner")


def runs_in_this_process(beam_args: Sequence[str]) -> bool:
    """True when the Beam flags name the in-process runner (read as text: Beam is not imported yet)."""
    runner, mode = "FnApiRunner", "in_memory"
    for arg in beam_args:
        name, _, value = arg.partition("=")
        if name == "--runner":
            runner = value
        elif name == "--direct_running_mode":
            mode = value
    return runner in _IN_PROCESS_RUNNERS and mode == "in_memory"


@contextlib.contextmanager
def early_embedder(config: BuildConfig, wanted: bool) -> Iterator[Optional[object]]:
    """Within the block, ``process_embedder(config.embedding)`` is a model loading in a child.

    Only for the local model and when ``wanted``; the child is stopped on exit (at once if it
    was never used). Yields the EmbedderProcess, or None.
    """
    if not wanted or config.embedding.kind != "minilm":
        yield None
        return
    from vdgr_core.embedding_process import EmbedderProcess

    with EmbedderProcess(config.embedding) as child:
        from transforms.embed import provided_embedder

        with provided_embedder(config.embedding, child):
            yield child


__all__ = ["early_embedder", "runs_in_this_process"]
