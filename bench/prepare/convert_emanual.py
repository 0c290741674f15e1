"""Convert the E-Manual data (shared/bench/emanual) into the VDGR corpus layout.

Layout, one domain per manual (``Galaxy_S10`` for the S10 file, the file stem otherwise)::

    <domain>/_meta.yaml                 description "Samsung Galaxy S10 user manual", product
    <domain>/NN-<slug>/_meta.yaml       title of a top-level TOC entry (a collection)
    <domain>/NN-<slug>/MM-<slug>.md     one document per second-level entry: front matter
                                        title = its title; deeper levels are ## / ### / ####

so the titles of a content node's path after the domain equal the section's
``section_hierarchy`` titles: "Apps>Samsung apps>Camera>Camera settings" is the heading
"### Camera settings" under "## Camera" in the document "Samsung apps" in the folder
titled "Apps". Level-1 headings are never written: the
parser would take a lone ``#`` heading as the document title. Ordinal prefixes keep the
manual's order and make names unique, so duplicate sibling titles need no renaming (their
titles stay equal; the index merges their directory nodes by path). A top-level entry
without children becomes a folder holding one document of the same title.

Questions (s10_50_questions.csv) become JSON lines ``{"id", "question", ["domain"],
"gold": {...}}`` for the settings: ``s10`` (S10 manual alone), ``scoped`` (all manuals,
``domain`` given), ``named`` (all manuals, "On my Galaxy S10, ..."), ``unscoped``.

Run: ``python -m bench.prepare.convert_emanual --out bench/work/emanual [--all]``.
"""
from __future__ import annotations

import argparse
import csv
from pathlib import Path

from bench.common import (
    SHARED_BENCH, fresh_dir, front_matter, md_heading, md_paragraph, slug, write_jsonl, write_meta,
)
from bench.prepare.emanual_tree import Section, load_manual, title_path

S10_DOMAIN = "Galaxy_S10"


def emanual_root() -> Path:
    """The read-only E-Manual data folder."""
    return SHARED_BENCH / "emanual"


def manual_files(include_others: bool) -> list[tuple[str, Path]]:
    """``(domain, json path)`` for the S10 manual and, optionally, the 32 others (sorted)."""
    root = emanual_root()
    out = [(S10_DOMAIN, root / "s10_manual_corpus.json")]
    if include_others:
        out += [(p.stem, p) for p in sorted((root / "other_manuals").glob("*.json"))]
    return out


def product_label(domain: str) -> str:
    """Human product name of a domain folder ("Galaxy_Note_10+" -> "Galaxy Note 10+")."""
    return domain.replace("_", " ")


def entry_name(ordinal: int, title: str) -> str:
    """Folder or file stem for the ``ordinal``-th TOC entry: ``"03-apps"``."""
    return f"{ordinal:02d}-{slug(title)}"


def _section_lines(secs: dict[str, Section], sid: str, level: int) -> list[str]:
    s = secs[sid]
    lines = [md_heading(min(level, 6), s.title), ""]
    paras = s.paras or [s.title]              # an empty section keeps its title as text
    for p in paras:
        lines += [md_paragraph(p), ""]
    for c in s.children:
        lines += _section_lines(secs, c, level + 1)
    return lines


def document_text(secs: dict[str, Section], sid: str) -> str:
    """Markdown of one second-level section and everything below it."""
    s = secs[sid]
    lines: list[str] = []
    for p in s.paras or [s.title]:
        lines += [md_paragraph(p), ""]
    for c in s.children:
        lines += _section_lines(secs, c, 2)
    return front_matter({"title": s.title}) + "\n".join(lines).rstrip("\n") + "\n"


def _descendant_paras(secs: dict[str, Section], sid: str) -> set[str]:
    out: set[str] = set()
    for c in secs[sid].children:
        out.add(secs[c].title)
        out.update(secs[c].paras)
        out |= _descendant_paras(secs, c)
    return out


def write_manual(src: Path, domain_dir: Path, product: str) -> dict:
    """Write one manual as a domain folder.

    Returns
    -------
    dict
        ``{"sections": n, "documents": n, "folders": n}``.
    """
    roots, secs = load_manual(src)
    write_meta(domain_dir, {"description": f"Samsung {product} user manual", "product": product,
                            "source": "EMNLP 2021 Findings E-Manual corpus"})
    n_docs = 0
    for i, rid in enumerate(roots, 1):
        r = secs[rid]
        folder = domain_dir / entry_name(i, r.title)
        meta = {"title": r.title}
        extra = [p for p in r.paras if p not in _descendant_paras(secs, rid)]
        if extra and r.children:
            meta["description"] = " ".join(extra)
        write_meta(folder, meta)
        docs = r.children or [rid]
        for j, cid in enumerate(docs, 1):
            if cid == rid:
                text = front_matter({"title": r.title}) + "\n\n".join(md_paragraph(p) for p in (r.paras or [r.title])) + "\n"
            else:
                text = document_text(secs, cid)
            (folder / (entry_name(j, secs[cid].title) + ".md")).write_text(text, encoding="utf-8")
            n_docs += 1
    return {"sections": len(secs), "documents": n_docs, "folders": len(roots)}


def manual_paths(src: Path) -> dict[str, list[str]]:
    """Section id -> title path for a manual (after the quirk handling)."""
    _, secs = load_manual(src)
    return {sid: title_path(secs, sid) for sid in secs}


def _norm(path) -> tuple:
    return tuple(" ".join(t.split()).casefold() for t in path)


def _is_subsequence(short: tuple, long: tuple) -> bool:
    it = iter(long)
    return all(x in it for x in short)


def resolve_gold(gold: list[str], paths: dict[str, list[str]]) -> tuple[list[str], str]:
    """Map a gold title path onto an existing section path.

    Exact (normalized) match first; otherwise the longest section path that is a
    subsequence of the gold path with the same first and last title (the CSV has one
    5-level path whose 4th title is missing from the 4-level corpus hierarchy).

    Returns
    -------
    (list of str, str)
        The resolved path and how: "exact", "subsequence" or "unresolved" (gold kept).
    """
    g = _norm(gold)
    for sid, p in paths.items():
        if _norm(p) == g:
            return p, "exact"
    cands = [p for p in paths.values()
             if _norm(p)[0] == g[0] and _norm(p)[-1] == g[-1] and _is_subsequence(_norm(p), g)]
    if cands:
        return max(cands, key=len), "subsequence"
    return list(gold), "unresolved"


def _lower_first(q: str) -> str:
    return q[:1].lower() + q[1:] if q[:2] and not q[:2].isupper() else q


def load_questions() -> list[dict]:
    """The 50 S10 questions with resolved gold (no ``domain`` key)."""
    src = emanual_root() / "s10_manual_corpus.json"
    paths = manual_paths(src)
    roots, secs = load_manual(src)
    folders = {secs[r].title: entry_name(i, secs[r].title) for i, r in enumerate(roots, 1)}
    out = []
    with open(emanual_root() / "s10_50_questions.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            raw = [t.strip() for t in row["section_path"].split(">")]
            path, how = resolve_gold(raw, paths)
            coll = [folders[path[0]], path[0]] if path[0] in folders else [path[0]]
            out.append({"id": f"s10-{row['question_id']}", "question": " ".join(row["question"].split()),
                        "gold": {"paths": [path], "domain": S10_DOMAIN, "collection": coll,
                                 "answer": row["answer"], "gold_path_raw": raw, "resolved": how}})
    return out


def settings(questions: list[dict], include_others: bool) -> dict[str, list[dict]]:
    """Question files per setting name."""
    if not include_others:
        return {"s10": questions}
    scoped = [dict(q, domain=S10_DOMAIN) for q in questions]
    named = [dict(q, question=f"On my {product_label(S10_DOMAIN)}, {_lower_first(q['question'])}")
             for q in questions]
    return {"scoped": scoped, "named": named, "unscoped": [dict(q) for q in questions]}


def convert(out: Path, include_others: bool = False) -> dict:
    """Write ``out/corpus`` and ``out/questions_<setting>.jsonl``.

    Parameters
    ----------
    out:
        Work folder (``corpus/`` inside it is replaced).
    include_others:
        Add the 32 other manuals (the ``emanual_all`` data set).

    Returns
    -------
    dict
        Statistics: manuals, sections, documents, questions per setting, gold resolution.
    """
    corpus = fresh_dir(Path(out) / "corpus")
    stats = {"manuals": 0, "sections": 0, "documents": 0}
    for domain, src in manual_files(include_others):
        s = write_manual(src, corpus / domain, product_label(domain))
        stats["manuals"] += 1
        stats["sections"] += s["sections"]
        stats["documents"] += s["documents"]
    qs = load_questions()
    stats["gold_resolution"] = {h: sum(q["gold"]["resolved"] == h for q in qs)
                                for h in ("exact", "subsequence", "unresolved")}
    stats["settings"] = {}
    for name, rows in settings(qs, include_others).items():
        stats["settings"][name] = write_jsonl(Path(out) / f"questions_{name}.jsonl", rows)
    return stats


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--all", action="store_true", help="include the 32 other manuals")
    a = ap.parse_args(argv)
    print(convert(a.out, a.all))


if __name__ == "__main__":
    main()
