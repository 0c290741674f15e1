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

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.common import REPO, emanual_all_corpus


def _vdgr(args: list[str]) -> tuple[float, str]:
    vdgr = str(Path(sys.executable).with_name("vdgr"))
    t0 = time.perf_counter()
    out = subprocess.run([vdgr, *args, "-q"], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if out.returncode != 0:
        sys.stderr.write(out.stdout + out.stderr)
        raise SystemExit("vdgr failed")
    return time.perf_counter() - t0, out.stdout


def _ids(index: Path, table: str, column: str) -> set:
    from vdgr_core.store.reader import IndexReader

    return set(IndexReader(str(index)).arrow(table, [column]).column(column).to_pylist())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--embedding", default="minilm", choices=["minilm", "hashing"])
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "update.json")
    args = ap.parse_args(argv)
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
