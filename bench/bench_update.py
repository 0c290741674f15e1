"""Incremental update benchmark on the EManual corpus: change 1% of the documents.

One command::

    .venv/bin/python -m bench.bench_update [--work bench/work] [--embedding minilm]

Side by side in one run: a full build of the corpus, then 1% of the documents (every 100th
document in path order) get one new paragraph, then `vdgr update`; reports update wall time /
full-build wall time (goal <= 0.1), the embeddings the update computed, and the number of new or
changed chunks and directory nodes (goal: embeddings == new or changed texts). Writes
bench/out/update.json.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

from bench.common import emanual_all_corpus, perf_arguments, run_timed, vdgr_command


def _vdgr(args: list[str]) -> tuple[float, str]:
    return run_timed([vdgr_command(), *args, "-q"])


def _ids(index: Path, table: str, column: str) -> set:
    from vdgr_core.store.reader import IndexReader

    return set(IndexReader(str(index)).arrow(table, [column]).column(column).to_pylist())


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
    dirs_before = _ids(index, "directories", "node_id")
    docs = sorted(p for p in corpus.rglob("*.md"))
    changed = docs[::100]
    for i, path in enumerate(changed):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.rstrip("\n") + f"\n\nService bulletin {i}: this procedure was revised "
                        f"for firmware release B{i:03d}; follow the steps above.\n", encoding="utf-8")
    update_s, out = _vdgr(["update", str(corpus), "--index", str(index), *emb])
    m = re.search(r"embeddings\s+([\d,]+) computed", out)
    computed = int(m.group(1).replace(",", "")) if m else -1
    new_chunks = len(_ids(index, "contents", "chunk_id") - chunks_before)
    new_dirs = len(_ids(index, "directories", "node_id") - dirs_before)
    result = {
        "documents": len(docs),
        "documents_changed": len(changed),
        "full_build_s": round(full_s, 1),
        "update_s": round(update_s, 1),
        "ratio_update_to_full": round(update_s / full_s, 3),
        "embeddings_computed": computed,
        "new_or_changed_chunks": new_chunks,
        "new_directory_nodes": new_dirs,
        "update_output": out.strip().splitlines(),
        "command": "python -m bench.bench_update",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{os.uname().sysname} {os.uname().machine}, {os.cpu_count()} cores",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
