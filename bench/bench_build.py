"""Build benchmark: the whole EManual corpus (S10 + 32 manuals) with the real model.

One command::

    .venv/bin/python -m bench.bench_build [--work bench/work] [--embedding minilm]

Measures, side by side in one run on one machine:
  1. the full build (`vdgr index`, a subprocess): wall time, chunks/s, peak RSS;
  2. embedding alone, in one process: the same texts the build embedded (the distinct content
     and directory-summary texts, read back from the built index) in one `embed()` call;
and reports the ratio build / embed-alone (goal: at most 1.5). Writes bench/out/build.json.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.common import REPO, emanual_all_corpus

_EMBED_ALONE = r"""
import json, sys, time
from schemas import tables as T
from schemas.config import EmbeddingConfig
from vdgr_core.embedding import make_embedder
from vdgr_core.indexing.rows import content_embedding_text
from vdgr_core.store.reader import IndexReader
r = IndexReader(sys.argv[1])
c = r.arrow(T.CONTENTS, ["path", "text"]).to_pylist()
d = r.arrow(T.DIRECTORIES, ["full_path", "summary"]).to_pylist()
texts = [content_embedding_text(x["path"], x["text"]) for x in c]
texts += [(" > ".join(x["full_path"][1:]) or x["full_path"][0]) + "\n" + x["summary"] for x in d]
distinct = sorted(set(texts))
t0 = time.perf_counter()
e = make_embedder(EmbeddingConfig(kind=sys.argv[2]))
t1 = time.perf_counter()
e.embed(distinct)
t2 = time.perf_counter()
print(json.dumps({"texts": len(texts), "distinct": len(distinct), "load_s": t1 - t0, "embed_s": t2 - t1}))
"""


def _run_child(cmd: list[str], env=None) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        sys.stderr.write(out.stdout + out.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, out.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--embedding", default="minilm", choices=["minilm", "hashing"])
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "build.json")
    args = ap.parse_args(argv)
    corpus = emanual_all_corpus(args.work)
    index = args.work / "bench_build_index"
    if index.exists():
        import shutil
        shutil.rmtree(index)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    vdgr = str(Path(sys.executable).with_name("vdgr"))
    build_s, build_out = _run_child([vdgr, "index", str(corpus), "--index", str(index),
                                     "--embedding", args.embedding, "-q"], env)
    peak_rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    _, embed_out = _run_child([sys.executable, "-c", _EMBED_ALONE, str(index), args.embedding], env)
    embed = json.loads(embed_out.strip().splitlines()[-1])
    manifest = json.loads((index / "manifest.json").read_text())
    chunks = manifest["counts"]["contents"]
    result = {
        "corpus": "EManual S10 + 32 manuals",
        "embedding": args.embedding,
        "documents": manifest["counts"]["documents"],
        "chunks": chunks,
        "directories": manifest["counts"]["directories"],
        "build_wall_s": round(build_s, 1),
        "chunks_per_s": round(chunks / build_s, 1),
        "peak_rss_mb": round(peak_rss_mb),
        "embed_texts": embed["texts"],
        "embed_distinct_texts": embed["distinct"],
        "embed_alone_s": round(embed["embed_s"], 1),
        "embed_alone_with_load_s": round(embed["embed_s"] + embed["load_s"], 1),
        "ratio_build_to_embed_alone": round(build_s / (embed["embed_s"] + embed["load_s"]), 2),
        "build_summary": build_out.strip().splitlines()[-10:],
        "command": "python -m bench.bench_build",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{os.uname().sysname} {os.uname().machine}, {os.cpu_count()} cores",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "build_summary"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
