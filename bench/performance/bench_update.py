"""Incremental update benchmark on the EManual corpus: change 1% of the documents.

One command::

    .venv/bin/python -m bench.performance.bench_update [--work bench/work] [--embedding minilm]

Side by side in one run: a full build of the corpus, then 1% of the documents (every 100th
document in path order) get one new paragraph, then `vdgr update` (a fresh process: start-up,
imports and model load included); reports update wall time / full-build wall time (goal <= 0.1),
the embeddings the update computed, and the number of new or changed chunks (goal: embeddings ==
new or changed texts). Then the same kind of change once more, applied by ``run_update`` in a
process that already has the model loaded, as a long-running `vdgr watch` does (the "warm"
figure). Writes bench/out/update.json.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import time
from pathlib import Path

from bench.common import emanual_all_corpus, perf_arguments, run_timed, vdgr_command
from bench.report.markdown import machine_line
from bench.report.provenance import commit, machine


def _vdgr(args: list[str]) -> tuple[float, str]:
    return run_timed([vdgr_command(), *args, "-q"])


def _embedded_texts(index: Path) -> set:
    """The distinct texts the index's vectors were computed from (chunks and directory nodes)."""
    from schemas import tables as T
    from types import SimpleNamespace

    from vdgr_core.indexing.rows import content_embedding_text, directory_embedding_text
    from vdgr_core.store.reader import IndexReader

    r = IndexReader(str(index))
    out = {content_embedding_text(p, t) for p, t in
           zip(*(r.arrow(T.CONTENTS, ["path", "text"]).column(c).to_pylist() for c in ("path", "text")))}
    d = r.arrow(T.DIRECTORIES, ["full_path", "summary"])
    out |= {directory_embedding_text(SimpleNamespace(full_path=tuple(fp), summary=sm or "")) for fp, sm in
            zip(d.column("full_path").to_pylist(), d.column("summary").to_pylist())}
    return out


def _ids(index: Path, table: str, column: str) -> set:
    from vdgr_core.store.reader import IndexReader

    return set(IndexReader(str(index)).arrow(table, [column]).column(column).to_pylist())


_WARM = r"""
import json, sys, time
from pipelines.run_update import run_update
from schemas.config import BuildConfig, EmbeddingConfig
from vdgr_core.indexing.model_home import process_embedder
config = BuildConfig(corpus=sys.argv[1], index=sys.argv[2], embedding=EmbeddingConfig(kind=sys.argv[3]))
process_embedder(config.embedding)          # loaded, as in a running `vdgr watch`
t0 = time.perf_counter()
report = run_update(config)
print(json.dumps({"update_s": time.perf_counter() - t0, "embeddings_computed": report.build.embeddings_computed}))
"""


def _change(docs: list[Path], tag: str) -> list[Path]:
    """Append one paragraph to every 100th document (1%)."""
    changed = docs[::100]
    for i, path in enumerate(changed):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.rstrip("\n") + f"\n\nService bulletin {tag}{i}: this procedure was revised "
                        f"for firmware release {tag}{i:03d}; follow the steps above.\n", encoding="utf-8")
    return changed


def main(argv=None) -> int:
    args = perf_arguments(__doc__.split("\n")[0], "update.json", argv)
    source = emanual_all_corpus(args.work)
    corpus, index = args.work / "update_corpus", args.work / "update_index"
    for p in (corpus, index):
        if p.exists():
            shutil.rmtree(p)
    shutil.copytree(source, corpus)
    emb = ["--embedding", args.embedding]
    full_s, _ = _vdgr(["index", str(corpus), "--index", str(index), *emb])
    chunks_before = _ids(index, "contents", "chunk_id")
    texts_before = _embedded_texts(index)
    dirs_before = _ids(index, "directories", "node_id")
    docs = sorted(p for p in corpus.rglob("*.md"))
    changed = _change(docs, "B")
    update_s, out = _vdgr(["update", str(corpus), "--index", str(index), *emb])
    m = re.search(r"embeddings\s+([\d,]+) computed", out)
    computed = int(m.group(1).replace(",", "")) if m else -1
    new_chunks = len(_ids(index, "contents", "chunk_id") - chunks_before)
    new_dirs = len(_ids(index, "directories", "node_id") - dirs_before)
    # measured: texts in the index after the update that it did not hold before (each needed a
    # vector; equal texts share one), to compare with the embeddings the update reports
    new_texts = len(_embedded_texts(index) - texts_before)
    _change(docs, "W")
    _, warm_out = run_timed([sys.executable, "-c", _WARM, str(corpus), str(index), args.embedding])
    warm = json.loads(warm_out.strip().splitlines()[-1])
    result = {
        "kind": "update",
        "dataset": "update",
        "documents": len(docs),
        "documents_changed": len(changed),
        "full_build_s": round(full_s, 1),
        "update_s": round(update_s, 1),
        "ratio_update_to_full": round(update_s / full_s, 3),
        "embeddings_computed": computed,
        "new_or_changed_chunks": new_chunks,
        "new_directory_nodes": new_dirs,
        "new_distinct_texts": new_texts,
        "embeddings_equal_new_texts": computed == new_texts,
        "warm_update_s": round(warm["update_s"], 2),
        "warm_ratio_update_to_full": round(warm["update_s"] / full_s, 3),
        "warm_embeddings_computed": warm["embeddings_computed"],
        "update_output": out.strip().splitlines(),
        "command": "python -m bench.performance.bench_update",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit(),
        "machine": machine(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


def render(report: dict) -> str:
    """The BENCHMARKS.md block of a bench_update report."""
    m, r = report["machine"], report
    return "\n".join([
        "### update (1% of the documents changed)", "",
        f"- command: `{r['command']}`", f"- date: {r['date']}; commit: {r.get('commit') or 'unknown'}",
        machine_line(m),
        "- corpus: EManual S10 + 32 manuals; each changed document gets one new paragraph; `vdgr update` in a "
        "new process (model load included), then the same kind of change applied in a warm process", "",
        "| documents | changed | full build s | update s | update / full | warm update s | warm / full | "
        "embeddings computed | new distinct texts in the index (measured) | equal |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {r['documents']:,} | {r['documents_changed']} | {r['full_build_s']} | {r['update_s']} | "
        f"{r['ratio_update_to_full']} | {r['warm_update_s']} | {r['warm_ratio_update_to_full']} | "
        f"{r['embeddings_computed']} | {r.get('new_distinct_texts', '-')} | "
        f"{'yes' if r.get('embeddings_equal_new_texts') else 'no'} |", ""])


if __name__ == "__main__":
    sys.exit(main())
