"""Copy the DCD corpus into a work folder with ``_meta.yaml`` files, and make questions.

The corpus is already ``<domain>/<collection>/<document>.txt``; this adds descriptions
derived from the names (domain ``zhk_sunny_shore`` -> residential complex "Sunny Shore").
Questions are generated deterministically from the documents (no randomness): facts
(``**Label:** value`` lines and table cells, see :mod:`bench.prepare.dcd_facts`) whose value is
specific to the complex are preferred, two per collection, rotating through the candidate
list by domain index so the 15 complexes get different questions. Each question carries
the DCD prefix "RC <complex>, section <collection>: ..." (``questions_dcd.jsonl``); the same
facts are also asked the way people ask, naming the complex in one of a few phrasings and no
collection (``questions_natural.jsonl``, e.g. "At Central Park, what is the mortgage rate?").
Gold: domain, collection, every document of the collection stating the fact (``sources``) and
the ``value``.

Run: ``python -m bench.prepare.convert_dcd --out bench/work/dcd [--per-collection 2]``.
"""
from __future__ import annotations

import argparse
import shutil
from collections import defaultdict
from pathlib import Path

from bench.common import SHARED_BENCH, fresh_dir, write_jsonl, write_meta
from bench.prepare.dcd_facts import Fact, extract_facts, question_for


def dcd_root() -> Path:
    """The read-only DCD corpus folder."""
    return SHARED_BENCH / "dcd_corpus"


def complex_name(domain: str) -> str:
    """``zhk_sunny_shore`` -> ``Sunny Shore``."""
    stem = domain[4:] if domain.startswith("zhk_") else domain
    return " ".join(w.capitalize() for w in stem.split("_"))


def collection_label(collection: str) -> str:
    """``management_company`` -> ``management company``."""
    return collection.replace("_", " ")


def _domains(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir())


def copy_corpus(src: Path, dst: Path) -> int:
    """Copy the documents and write domain and collection ``_meta.yaml``; return the count."""
    n = 0
    for d in _domains(src):
        name = complex_name(d.name)
        colls = sorted(c for c in d.iterdir() if c.is_dir())
        write_meta(dst / d.name, {
            "description": f"Residential complex (RC) {name}: "
                           + ", ".join(collection_label(c.name) for c in colls),
            "complex": name})
        for c in colls:
            write_meta(dst / d.name / c.name, {
                "description": f"{collection_label(c.name).capitalize()} of residential complex {name}"})
            for f in sorted(c.glob("*.txt")):
                shutil.copyfile(f, dst / d.name / c.name / f.name)
                n += 1
    return n


def _key(f: Fact) -> tuple:
    return (f.kind, f.label.lower(), f.column.lower())


def collection_facts(coll: Path, rel_prefix: str) -> dict[tuple, dict]:
    """Facts of one collection merged by key: ``{"fact", "sources", "order"}``.

    The gold value is the shortest value stated for the key (the others extend it).
    """
    out: dict[tuple, dict] = {}
    order = 0
    for f in sorted(coll.glob("*.txt")):
        for fact in extract_facts(f.read_text(encoding="utf-8")):
            order += 1
            e = out.setdefault(_key(fact), {"fact": fact, "sources": [], "order": order})
            rel = f"{rel_prefix}/{f.name}"
            if rel not in e["sources"]:
                e["sources"].append(rel)
            if len(fact.value) < len(e["fact"].value):
                e["fact"] = fact
    return out


_NATURAL = (
    "At {name}, {q}",
    "In the {name} residential complex, {q}",
    "{Q} (I live in {name}.)",
    "For {name}: {q}",
)


def natural_question(name: str, question: str, n: int) -> str:
    """``question`` naming complex ``name`` in the ``n``-th phrasing (rotating, no collection).

    Examples
    --------
    >>> natural_question("Central Park", "What is the mortgage rate?", 0)
    'At Central Park, what is the mortgage rate?'
    """
    q = question[0].lower() + question[1:]
    return _NATURAL[n % len(_NATURAL)].format(name=name, q=q, Q=question)


def natural_questions(rows: list[dict]) -> list[dict]:
    """The questions of :func:`make_questions` phrased naturally (ids ``dcdn-...``)."""
    out = []
    for n, r in enumerate(rows):
        prefix, plain = r["question"].split(": ", 1)
        name = prefix[len("RC "):].split(", section ")[0]
        out.append({**r, "id": "dcdn-" + r["id"][len("dcd-"):], "question": natural_question(name, plain, n)})
    return out


def make_questions(src: Path, per_collection: int = 2) -> list[dict]:
    """Deterministic questions over the whole corpus (15 x 5 x ``per_collection``)."""
    domains = _domains(src)
    facts = {(d.name, c.name): collection_facts(c, f"{d.name}/{c.name}")
             for d in domains for c in sorted(x for x in d.iterdir() if x.is_dir())}
    shared: dict[tuple, set] = defaultdict(set)       # (collection, key) -> domains per value
    values: dict[tuple, dict] = defaultdict(dict)
    for (dom, coll), fs in facts.items():
        for k, e in fs.items():
            values[(coll, k)][dom] = e["fact"].value.casefold()
    for (coll, k), per_dom in values.items():
        for dom, v in per_dom.items():
            shared[(coll, k, dom)] = {d for d, w in per_dom.items() if w == v}
    rows = []
    for i, d in enumerate(domains):
        for c in sorted(x for x in d.iterdir() if x.is_dir()):
            fs = facts[(d.name, c.name)]
            ranked = sorted(fs.items(), key=lambda kv: (len(shared[(c.name, kv[0], d.name)]), kv[1]["order"]))
            unique = [kv for kv in ranked if len(shared[(c.name, kv[0], d.name)]) == 1]
            pool = unique if len(unique) >= per_collection else ranked
            chosen = [pool[(per_collection * i + j) % len(pool)] for j in range(min(per_collection, len(pool)))]
            for k, e in chosen:
                fact: Fact = e["fact"]
                q = f"RC {complex_name(d.name)}, section {collection_label(c.name)}: {question_for(fact)}"
                rows.append({
                    "id": f"dcd-{d.name}-{c.name}-{len(rows):03d}",
                    "question": q,
                    "gold": {"domain": d.name, "collection": [c.name, collection_label(c.name)],
                             "sources": e["sources"], "value": fact.value, "heading": fact.heading,
                             "answer": fact.value,
                             "value_shared_by": sorted(shared[(c.name, k, d.name)] - {d.name})},
                })
    return rows


def convert(out: Path, per_collection: int = 2) -> dict:
    """Write ``out/corpus`` and ``out/questions_dcd.jsonl``; return counts."""
    src = dcd_root()
    corpus = fresh_dir(Path(out) / "corpus")
    n_docs = copy_corpus(src, corpus)
    rows = make_questions(src, per_collection)
    write_jsonl(Path(out) / "questions_dcd.jsonl", rows)
    write_jsonl(Path(out) / "questions_natural.jsonl", natural_questions(rows))
    return {"documents": n_docs, "questions": len(rows),
            "value_unique_to_domain": sum(not r["gold"]["value_shared_by"] for r in rows)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-collection", type=int, default=2)
    a = ap.parse_args(argv)
    print(convert(a.out, a.per_collection))


if __name__ == "__main__":
    main()
