"""The index segments of a commit, built by the runner's workers (a second, short pipeline).

Lance builds an index as segments over fragments of one committed table version
(vdgr_core/store/table_indexes.py). A build's driver commits its tables, then hands the
segments due on them to this pipeline: one element per segment, each built by a worker and its
metadata written to the staging area, which the driver reads back to commit them. On the
in-process runner the workers are this process, so the segments are built here directly.
"""
from __future__ import annotations

import functools
from typing import Sequence

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines.options import pipeline_options, runs_in_this_process
from transforms.read import open_read
from vdgr_core.store.table_indexes import IndexTask, build_segment, build_segments_here
from vdgr_core.store.writer import SegmentBuilder


def _segment_path(root: str, number: int) -> str:
    return FileSystems.join(root, "segments", f"{number:06d}.pkl")


def _build_and_write(numbered: tuple[int, IndexTask], index_uri: str, root: str) -> None:
    number, task = numbered
    with FileSystems.create(_segment_path(root, number), compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(build_segment(index_uri, task))


def _on_workers(index_uri: str, tasks: Sequence[IndexTask], *, beam_args: Sequence[str], root: str) -> list[bytes]:
    from pipelines.run_build import run_to_end

    p = beam.Pipeline(options=pipeline_options(beam_args))
    _ = (p | "Segments" >> beam.Create(list(enumerate(tasks)))
         | "Spread" >> beam.Reshuffle()
         | "Build segment" >> beam.Map(_build_and_write, index_uri=index_uri, root=root))
    run_to_end(p)
    out = []
    for number in range(len(tasks)):
        with open_read(_segment_path(root, number)) as f:
            out.append(f.read())
    return out


def segment_builder(beam_args: Sequence[str], root: str) -> SegmentBuilder:
    """Where a commit builds its index segments: this process for the in-process runner, else
    the runner's workers (their metadata staged under ``root``)."""
    if runs_in_this_process(beam_args):
        return build_segments_here
    return functools.partial(_on_workers, beam_args=tuple(beam_args), root=root)


__all__ = ["segment_builder"]
