"""A large build's vector indexes, trained in a child process while the commit writes layouts.

At 100k chunks the commit spent ~10 s training the IVF_SQ indexes of contents and directories
and ~10 s writing the domains' query layouts, one after the other. LanceDB's index build keeps
to one core and holds the GIL for part of it (a thread beside it ran no faster), so the
indexes are trained in a ``spawn`` child process instead: the layouts read the same table
versions meanwhile, and nothing else writes those tables until the child is done (the scalar
indexes are built before it starts). The child is stopped if the block is left early (an
error, Ctrl-C). Where no vector index is due (below ``StoreConfig.vector_index_min_rows``),
or the index is in object storage, the indexes are built in this process as before.
"""
from __future__ import annotations

import contextlib
import multiprocessing
from typing import Iterator, Mapping, Optional

from schemas.config import StoreConfig
from vdgr_core.store.lance_store import TableWrite, connect, has_table
from vdgr_core.store.location import is_remote
from vdgr_core.store.table_indexes import VECTOR_TABLES, ensure_vector_index


def vector_indexes_due(writes: Mapping[str, TableWrite], store: StoreConfig) -> list[str]:
    """The vector tables of ``writes`` large enough for a vector index (a full build's tables)."""
    if store.vector_index == "none":
        return []
    return [n for n in VECTOR_TABLES if n in writes and writes[n].rows >= store.vector_index_min_rows]


def build_vector_indexes(index_dir: str, names: list[str], rows: Mapping[str, int], store: StoreConfig,
                         dim: int, previous: Optional[Mapping[str, dict]] = None) -> dict[str, Optional[dict]]:
    """Build (or keep) the vector index of each table in ``names``; its manifest description."""
    db = connect(index_dir)
    out: dict[str, Optional[dict]] = {}
    for name in names:
        if has_table(db, name):
            out[name] = ensure_vector_index(name, db.open_table(name), store, rows[name], dim,
                                            (previous or {}).get(name))
    return out


def _child(conn, *args) -> None:
    try:
        conn.send(("ok", build_vector_indexes(*args)))
    except BaseException as exc:        # sent whole to the parent, which raises it
        conn.send(("error", exc))
    finally:
        conn.close()


class VectorIndexesBeside:
    """The result of :func:`vector_indexes_beside`: ``described`` (table -> manifest
    description) once the block has ended."""

    def __init__(self) -> None:
        self.described: dict[str, Optional[dict]] = {}


@contextlib.contextmanager
def vector_indexes_beside(index_dir: str, writes: Mapping[str, TableWrite], store: StoreConfig,
                          dim: int) -> Iterator[VectorIndexesBeside]:
    """Train the vector indexes due on ``writes`` in a child process while the block runs.

    On leaving the block normally, waits for the child and fills ``described``; an error in the
    child is raised here. Where nothing is due or ``index_dir`` is remote, the indexes are built
    in this process when the block ends.
    """
    rows = {n: w.rows for n, w in writes.items()}
    names = vector_indexes_due(writes, store)
    here = [n for n in VECTOR_TABLES if n in writes and n not in names]   # none due: a quick check
    out = VectorIndexesBeside()
    if not names or is_remote(index_dir):
        yield out
        out.described = build_vector_indexes(index_dir, names + here, rows, store, dim)
        return
    ctx = multiprocessing.get_context("spawn")
    parent_end, child_end = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(child_end, index_dir, names, rows, store, dim),
                        name="vdgr-vector-index", daemon=True)
    child.start()
    child_end.close()
    try:
        yield out
        try:
            status, value = parent_end.recv()
        except EOFError:
            child.join()
            raise RuntimeError(f"the vector index process ended with code {child.exitcode} "
                               "before it reported (killed, or out of memory?)") from None
        if status == "error":
            raise value
        child.join()
        out.described = {**value, **build_vector_indexes(index_dir, here, rows, store, dim)}
    finally:
        if child.is_alive():
            child.terminate()
            child.join()
        parent_end.close()


__all__ = ["VectorIndexesBeside", "build_vector_indexes", "vector_indexes_beside", "vector_indexes_due"]
