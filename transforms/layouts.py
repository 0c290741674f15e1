"""Each domain's query layout, built on a worker from that domain's fragments."""
from __future__ import annotations

import apache_beam as beam

from schemas import tables as T
from vdgr_core.store.fragments import read_fragments
from vdgr_core.store.layout_build import LayoutOptions, layout_columns, layout_of_rows

#: the tables a layout is built from
LAYOUT_TABLES = (T.CONTENTS, T.DIRECTORIES, T.ENTITIES, T.EDGES)


class _DomainLayoutDoFn(beam.DoFn):
    def __init__(self, index_root: str, dim: int, options: LayoutOptions):
        self._root, self._dim, self._options = index_root, dim, options

    def process(self, kv):
        domain, named = kv
        by_table: dict[str, list[str]] = {name: [] for name in LAYOUT_TABLES}
        for table, fragments in named:
            by_table[table] += fragments
        raw = {name: read_fragments(self._root, name, sorted(texts),
                                    layout_columns(name, T.schema_for(name, self._dim), self._options))
               for name, texts in by_table.items()}
        ref = layout_of_rows(self._root, domain, raw, self._options)
        if ref is not None:
            yield {"kind": "layout", "domain": domain, "ref": ref.to_json()}


class BuildLayouts(beam.PTransform):
    """``fragments`` records of contents, directories, entities and edges (partition starting
    with the domain) -> one query layout per domain (vdgr_core/store/layout_build.py), built by
    one worker from that domain's fragments and published under its digest; a ``layout`` staged
    record each. Only fragment names cross the shuffle, never rows."""

    def __init__(self, index_root: str, dim: int, options: LayoutOptions):
        super().__init__()
        self._args = (index_root, dim, options)

    def expand(self, records):
        return (records
                | "Key by domain" >> beam.Map(lambda r: (r["part"][0], (r["table"], r["fragments"])))
                | "Fragments of domain" >> beam.GroupByKey()
                | "Build layout" >> beam.ParDo(_DomainLayoutDoFn(*self._args)))
