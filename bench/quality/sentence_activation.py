"""Prototype: LinearRAG-style sentence activation as entity seeds of the graph walk.

``python -m bench.quality.sentence_activation [--sets musique,s10,dcd] [--betas 0.05,0.2,0.5] [--write]``

The graph route (vdgr_core/query/graph_route.py) seeds its Personalized PageRank with route 1's
passages and with the entities whose names occur in the question. LinearRAG (Zhuang et al.,
2025) adds *semantic bridging*: starting from the question's entities, it looks at the
sentences that mention them, keeps the few most similar to the question (cosine at least
:data:`TAU`), and activates the other entities of those sentences with the parent's score times
that similarity, for up to :data:`ITERATIONS` rounds. The bridge entity of a multi-hop question
("the performer of Green" -> Steve Hillage) is usually named in such a sentence.

The product stores no sentence vectors, so this bench computes them from the index's chunks
(``vdgr_core.sentences.split_sentences``, the index's embedder; cached beside the bench
index) and runs the default configuration (``full``) with a graph route that adds the activated
entities to the entity seeds, at several entity shares of the restart mass (``graph_beta``).
It also times the embedding of every sentence against the embedding of every chunk, side by
side: what building sentence vectors would add to an index build.

Not measured here: access control (the bench corpora have none; a product version must drop
sentences of passages the caller cannot read before they activate anything).

``--write`` writes ``bench/out/sentence_activation.json`` and the ``sentence_activation``
block of BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from bench.common import REPO
from bench.quality.ablation import (COLS, SETS, aggregate_halves, answer_questions, block_header, config_rows,
                                    open_set, write_report)
from bench.report.provenance import commit, machine

TAU = 0.4          # a sentence must be at least this similar to the question to bridge
ITERATIONS = 3     # activation rounds
TOP_SENTENCES = 3  # sentences kept per activated entity and round


class Sentences:
    """Every sentence of an index's chunks: its vector, its chunk and the entities it names."""

    def __init__(self, reader, data, embedder, cache: Path):
        from vdgr_core.entities import norm_tokens
        from vdgr_core.ids import entity_id
        from vdgr_core.sentences import split_sentences

        rows = reader.arrow("contents", ["chunk_id", "domain", "text", "entities"]).to_pylist()
        self.texts: list[str] = []
        self.entities: list[list[int]] = []
        self.by_entity: dict[int, list[int]] = {}
        for r in rows:
            names = [e for e in (r["entities"] or ()) if e]
            erows = data.entities.rows_of(r["domain"], [entity_id(r["domain"], e) for e in names])
            for s in split_sentences(r["text"] or ""):
                words = " " + " ".join(norm_tokens(s)) + " "
                here = [int(er) for e, er in zip(names, erows) if er >= 0 and f" {e} " in words]
                for er in here:
                    self.by_entity.setdefault(er, []).append(len(self.texts))
                self.texts.append(s)
                self.entities.append(here)
        self.chunk_texts = [r["text"] or "" for r in rows]
        key = f"{reader.manifest.build_id}-{len(self.texts)}"
        if cache.exists() and json.loads(cache.with_suffix(".json").read_text()).get("key") == key:
            self.vectors = np.load(cache)
            self.embed_s = json.loads(cache.with_suffix(".json").read_text())["embed_s"]
        else:
            t0 = time.perf_counter()
            self.vectors = np.concatenate([embedder.embed(self.texts[i:i + 256])
                                           for i in range(0, len(self.texts), 256)])
            self.embed_s = time.perf_counter() - t0
            np.save(cache, self.vectors)
            cache.with_suffix(".json").write_text(json.dumps({"key": key, "embed_s": self.embed_s}))

    def activate(self, seeds: Sequence[int], qvec: np.ndarray, visible) -> dict[int, float]:
        """Entity row -> activation: the seeds at 1, then LinearRAG's bridging rounds."""
        act = {int(e): 1.0 for e in seeds}
        frontier = dict(act)
        for _ in range(ITERATIONS):
            nxt: dict[int, float] = {}
            for e, a in frontier.items():
                ss = self.by_entity.get(e)
                if not ss:
                    continue
                sims = self.vectors[ss] @ qvec
                for j in np.argsort(-sims)[:TOP_SENTENCES]:
                    if sims[j] < TAU:
                        break
                    for e2 in self.entities[ss[j]]:
                        v = a * float(sims[j])
                        if v > act.get(e2, 0.0) and v > nxt.get(e2, 0.0) and visible[e2]:
                            nxt[e2] = v
            if not nxt:
                break
            act.update(nxt)
            frontier = nxt
        return act


def activated_graph_route(data, vectors, config, sentences: Sentences):
    """A GraphRoute whose entity seeds are the question's entities plus the activated ones."""
    from vdgr_core.query.graph_route import GraphRoute

    class ActivatedGraphRoute(GraphRoute):
        def matched_entities(self, q, emask):
            exact = super().matched_entities(q, emask)
            act = sentences.activate(exact, np.asarray(q.qvec, dtype=np.float32), emask)
            return exact + sorted((e for e in act if e not in exact), key=lambda e: (-act[e], e))

    return ActivatedGraphRoute(data, vectors, config)


def run_set(es, work: Path, betas: Sequence[float], log=print) -> dict:
    from vdgr_core.query.knowledge_base import KnowledgeBase
    from vdgr_core.query.vectors import VectorSearch

    opened = open_set(es, work)
    ds, questions = opened.ds, opened.questions
    reader, data, embedder, default = opened.reader, opened.data, opened.embedder, opened.default
    sentences = Sentences(reader, data, embedder, opened.base / "sentence_vectors.npy")
    t0 = time.perf_counter()
    for i in range(0, len(sentences.chunk_texts), 256):
        embedder.embed(sentences.chunk_texts[i:i + 256])
    chunk_s = time.perf_counter() - t0
    out = {"note": es.note, "primary": es.primary, "sentences": len(sentences.texts),
           "chunks": len(sentences.chunk_texts), "sentence_embed_s": round(sentences.embed_s, 1),
           "chunk_embed_s": round(chunk_s, 1), "configs": {}}
    runs = [("full", default, False)]
    runs += [(f"full + sentence activation, graph_beta {b}", default.model_copy(update={"graph_beta": b}), True)
             for b in betas]
    for name, cfg, activated in runs:
        vectors = VectorSearch(data, cfg.slices.ann)
        graph = activated_graph_route(data, vectors, cfg, sentences) if activated else None
        kb = KnowledgeBase(reader, data, cfg, embedder, vectors=vectors, graph=graph)
        t0 = time.perf_counter()
        out["configs"][name] = aggregate_halves(answer_questions(kb, questions, ds))
        key = es.primary + "@5"
        log(f"[sentence_activation] {es.name} / {name}: {key} dev {out['configs'][name]['dev'].get(key)} "
            f"test {out['configs'][name]['test'].get(key)} ({time.perf_counter() - t0:.0f}s)")
    return out


def render(report: dict) -> str:
    lines = [*block_header("sentence_activation", report),
             f"- prototype (bench only; the product stores no sentence vectors): LinearRAG-style activation, "
             f"tau {TAU}, {ITERATIONS} rounds, {TOP_SENTENCES} sentences per entity and round; "
             "development / test halves by sha256(question id)", ""]
    for name, res in report["sets"].items():
        cols = COLS[res["primary"]][:4]
        lines += [f"#### {name}: {res['note']}", "",
                  f"{res['sentences']} sentences in {res['chunks']} chunks; embedding every sentence took "
                  f"{res['sentence_embed_s']} s, every chunk {res['chunk_embed_s']} s (the same embedder)", ""]
        lines += config_rows(res["configs"], cols)
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="musique,s10,s10_long,dcd,dcd_natural")
    ap.add_argument("--betas", default="0.05,0.2,0.5")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    betas = [float(b) for b in a.betas.split(",")]
    report = {"kind": "sentence_activation",
              "command": "python -m bench.quality.sentence_activation " + " ".join(argv if argv is not None else sys.argv[1:]),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine(), "commit": commit(), "sets": {}}
    for s in a.sets.split(","):
        report["sets"][s] = run_set(SETS[s.strip()], a.work.resolve(), betas)
    text = render(report)
    print(text)
    if a.write:
        write_report("sentence_activation", report, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
