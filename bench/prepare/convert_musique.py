"""Convert the MuSiQue subset (shared/bench/multihop) into the VDGR corpus layout.

One domain ``musique`` with one collection ``passages``; one Markdown document per passage
``passages/pNNNN-<slug>.md`` (front matter title = passage title; NNNN = its index in
``musique_train_corpus.json``). Titles repeat (85 titles have 2-6 passages), so gold is the
passage file, not its title. Questions: ``{"id", "question", "gold": {"sources": [...],
"titles": [...], "answers": [answer, *aliases]}}``; the metric is passage recall@k over
distinct passages among the evidence (``src_recall@k``).

Run: ``python -m bench.prepare.convert_musique --out bench/work/musique``.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.common import SHARED_BENCH, fresh_dir, front_matter, md_paragraph, slug, write_jsonl, write_meta

DOMAIN = "musique"
COLLECTION = "passages"


def multihop_root() -> Path:
    """The read-only MuSiQue data folder."""
    return SHARED_BENCH / "multihop"


def passage_rel(idx: int, title: str) -> str:
    """Corpus-relative file of passage ``idx``."""
    return f"{DOMAIN}/{COLLECTION}/p{idx:04d}-{slug(title, 40)}.md"


def convert(out: Path, limit_questions: int | None = None) -> dict:
    """Write ``out/corpus`` and ``out/questions_musique.jsonl``.

    Parameters
    ----------
    out:
        Work folder (``corpus/`` inside it is replaced).
    limit_questions:
        Keep only the first n questions (the corpus stays whole).

    Returns
    -------
    dict
        ``{"passages", "questions", "supporting"}`` counts.
    """
    root = multihop_root()
    passages = json.loads((root / "musique_train_corpus.json").read_text(encoding="utf-8"))
    questions = json.loads((root / "musique_train.json").read_text(encoding="utf-8"))
    corpus = fresh_dir(Path(out) / "corpus")
    write_meta(corpus / DOMAIN, {"description": "Wikipedia passages of the MuSiQue multi-hop QA subset "
                                                "(HippoRAG): people, places, organisations, works"})
    write_meta(corpus / DOMAIN / COLLECTION, {"description": "One document per Wikipedia passage"})
    index: dict[tuple[str, str], int] = {}
    for i, p in enumerate(passages):
        rel = passage_rel(i, p["title"])
        index[(p["title"], p["text"])] = i
        body = front_matter({"title": " ".join(p["title"].split())}) + md_paragraph(p["text"]) + "\n"
        (corpus / rel).write_text(body, encoding="utf-8")
    rows, n_sup = [], 0
    for q in questions[:limit_questions]:
        sup = [p for p in q["paragraphs"] if p["is_supporting"]]
        ids = [index[(p["title"], p["paragraph_text"])] for p in sup]
        n_sup += len(ids)
        rows.append({"id": q["id"], "question": q["question"],
                     "gold": {"sources": [passage_rel(i, passages[i]["title"]) for i in ids],
                              "titles": [passages[i]["title"] for i in ids],
                              "answers": [q["answer"], *q.get("answer_aliases", [])],
                              "answer": q["answer"]}})
    write_jsonl(Path(out) / "questions_musique.jsonl", rows)
    return {"passages": len(passages), "questions": len(rows), "supporting": n_sup}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    print(convert(a.out))


if __name__ == "__main__":
    main()
