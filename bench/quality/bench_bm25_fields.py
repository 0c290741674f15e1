"""BM25 field ablation: what the chunk's heading and path add, as one field or as separate fields.

``python -m bench.quality.bench_bm25_fields [--sets s10,s10_long,...] [--write]``

The shipped BM25 shard (vdgr_core/store/tantivy_shard.py, schema version 3) indexes one field
per chunk, ``body`` = the chunk's heading path, its heading written twice, then its text. This
bench measures that choice against the alternatives on every set of :mod:`bench.quality.ablation`, on
the same index and the same questions:

- ``text``: the chunk's text alone;
- ``heading + text, one field``: the shard of schema version 2;
- ``heading x2 + text, one field``: the heading written twice (weight 2 in BM25F's one-field
  form: a field's weight multiplies its term frequencies), no ancestors;
- ``heading path + text, one field``: every title from the domain down to the chunk's own
  heading (the ``path`` column, which ends with the heading), then the text;
- ``heading path, heading x2 + text, one field (shipped)``: both (the shard the product built);
- ``text, heading: two fields``: the shard of schema version 1, each field scored on its own
  and summed with equal weight;
- ``text, heading, path: three fields``: as before, with the ancestor titles as a third field.

For each variant the bench builds a tantivy index per domain of the set's index in a
temporary folder (the product's ``en_stem`` tokenizer, the same access fields), swaps it in
for the shipped shard behind the index reader, and answers every question with
``KnowledgeBase.query`` under two configurations: the BM25 route alone and the default
(``full``), so the table shows both what BM25 gains and what reaches the user. Figures are
reported on the development and test halves (:mod:`bench.prepare.splits`).

``--write`` writes ``bench/out/bm25_fields.json`` and the ``bm25_fields`` block of
BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Mapping, Optional

from bench.common import REPO
from bench.quality.ablation import (COLS, SETS, aggregate_halves, answer_questions, block_header, fmt_metric,
                                    open_set, write_report)
from bench.report.provenance import commit, machine

CONFIGS = ("bm25", "full")


def _heading(r: Mapping) -> str:
    return r["title"] or ""


def _path(r: Mapping) -> str:
    return " / ".join(r["path"] or ())


def _heading_path(r: Mapping) -> str:
    titles = list(r["path"] or ())
    if r["title"] and (not titles or titles[-1] != r["title"]):
        titles.append(r["title"])
    return " / ".join(titles)


# variant name -> {field: text of a chunk row}; None = the shard the product built
VARIANTS: dict[str, Optional[dict[str, Callable[[Mapping], str]]]] = {
    "text": {"text": lambda r: r["text"] or ""},
    "heading + text, one field": {"text": lambda r: f"{_heading(r)}\n{r['text'] or ''}".strip()},
    "heading x2 + text, one field": {
        "text": lambda r: f"{_heading(r)}\n{_heading(r)}\n{r['text'] or ''}".strip()},
    "heading path + text, one field": {"text": lambda r: f"{_heading_path(r)}\n{r['text'] or ''}".strip()},
    "heading path, heading x2 + text, one field (shipped)": None,
    "text, heading: two fields": {"text": lambda r: r["text"] or "", "title": _heading},
    "text, heading, path: three fields": {"text": lambda r: r["text"] or "", "title": _heading,
                                          "path_text": _path},
}


def build_variant(folder: Path, domain: str, rows: list[Mapping], fields: Mapping[str, Callable]):
    """A tantivy index of ``rows`` with the text ``fields`` and the product's access fields,
    opened as a :class:`~vdgr_core.store.tantivy_shard.ShardSearcher` searching those fields."""
    import tantivy

    from vdgr_core.store.tantivy_shard import ShardSearcher

    b = tantivy.SchemaBuilder()
    b.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    for f in fields:
        b.add_text_field(f, stored=False, tokenizer_name="en_stem")
    for f in ("domain", "version", "acl", "public"):
        b.add_text_field(f, stored=False, tokenizer_name="raw")
    folder.mkdir(parents=True)
    index = tantivy.Index(b.build(), path=str(folder))
    writer = index.writer()
    for r in rows:
        acl = list(r["acl"] or ())
        writer.add_document(tantivy.Document(
            chunk_id=r["chunk_id"], domain=domain, version=r["version"], acl=acl or [""],
            public="1" if not acl else "0", **{f: fn(r) for f, fn in fields.items()}))
    writer.commit()
    writer.wait_merging_threads()
    searcher = ShardSearcher(str(folder))
    searcher._fields = tuple(fields)       # search every variant field, equal weights
    return searcher


class _SwappedShards:
    """The index reader with the BM25 shards replaced; everything else delegated."""

    def __init__(self, reader, shards: Mapping[str, object]):
        self._reader, self._shards = reader, dict(shards)

    def shard(self, domain: str):
        return self._shards.get(domain)

    def __getattr__(self, name):
        return getattr(self._reader, name)


def run_set(es, work: Path, tmp: Path, variants=None, log=print) -> dict:
    """Every variant x configuration over every question of ``es``."""
    from vdgr_core.query.knowledge_base import KnowledgeBase

    opened = open_set(es, work)
    ds, questions = opened.ds, opened.questions
    reader, data, embedder, default = opened.reader, opened.data, opened.embedder, opened.default
    rows = reader.arrow("contents", ["chunk_id", "domain", "text", "title", "path", "version", "acl"]).to_pylist()
    by_domain: dict[str, list] = {}
    for r in rows:
        by_domain.setdefault(r["domain"], []).append(r)
    out = {"note": es.note, "primary": es.primary, "index_args": list(es.index_args), "variants": {}}
    vectors = None
    for vname, fields in VARIANTS.items():
        if variants and vname not in variants:
            continue
        if fields is None:
            swapped = reader
        else:
            slug = "".join(c if c.isalnum() else "_" for c in vname)
            swapped = _SwappedShards(reader, {d: build_variant(tmp / es.name / slug / d, d, rs, fields)
                                              for d, rs in sorted(by_domain.items())})
        got = {}
        for name in CONFIGS:
            over = {"routes": ("bm25",), "backtrack": False, "reflection": False} if name == "bm25" else {}
            kb = KnowledgeBase(swapped, data, default.model_copy(update=over), embedder, vectors=vectors)
            vectors = kb.vectors
            t0 = time.perf_counter()
            got[name] = aggregate_halves(answer_questions(kb, questions, ds))
            key = es.primary + "@5"
            log(f"[bm25_fields] {es.name} / {vname} / {name}: {key} dev {got[name]['dev'].get(key)} "
                f"test {got[name]['test'].get(key)} ({time.perf_counter() - t0:.0f}s)")
        out["variants"][vname] = got
    return out


def render(report: dict) -> str:
    """Markdown: per set, one row per BM25 variant and configuration."""
    lines = [*block_header("bm25_fields", report),
             "- each variant's tantivy index built from the set's index contents; the BM25 route alone "
             "and the default configuration (`full`) answered with it; development / test halves "
             "by sha256(question id)", ""]
    for name, res in report["sets"].items():
        cols = COLS[res["primary"]][:4]
        lines += [f"#### {name}: {res['note']}", ""]
        head = ["BM25 fields", "configuration", *[f"{h} dev / test / all" for _, h in cols]]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for vname, got in res["variants"].items():
            for cfg, agg in got.items():
                cells = [" / ".join(fmt_metric(k, agg[h].get(k)) for h in ("dev", "test", "all")) for k, _ in cols]
                lines.append("| " + " | ".join([vname, cfg, *cells]) + " |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--variants", help="variant names separated by semicolons (default: all)")
    ap.add_argument("--write", action="store_true", help="write bench/out/bm25_fields.json and BENCHMARKS.md")
    a = ap.parse_args(argv)
    report = {"kind": "bm25_fields",
              "command": "python -m bench.quality.bench_bm25_fields " + " ".join(argv if argv is not None else sys.argv[1:]),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "sets": {}}
    with tempfile.TemporaryDirectory(prefix="vdgr-bm25-fields-") as tmp:
        for s in a.sets.split(","):
            report["sets"][s] = run_set(SETS[s.strip()], a.work.resolve(), Path(tmp),
                                        {v.strip() for v in a.variants.split(";")} if a.variants else None)
    text = render(report)
    print(text)
    if a.write:
        write_report("bm25_fields", report, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
