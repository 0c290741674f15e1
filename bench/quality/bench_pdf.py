"""PDF extraction on real manuals: extraction figures and retrieval on questions written from them.

``python -m bench.quality.bench_pdf [--label after] [--embedding hashing] [--extractors] [--write]``

The manuals are Debian's packaged PDFs, fetched by ``apt-get download`` (bash-doc: the Bash
reference manual ``bashref.pdf`` with bookmarks and the bash(1) page ``bash.pdf`` without;
gnuplot-doc: ``gnuplot.pdf``) and unpacked with ``dpkg-deb -x`` into ``bench/work/pdf``
(never committed). The corpus has two domains, ``bash`` and ``gnuplot``.

The questions (``bench/data/pdf_questions.jsonl``) were written from the PDFs with their
answers located first: each gold names the document, the 1-based page and a short exact answer
string taken from that page. A question is a hit at k when one of the first k evidences is from
the gold document and its text contains the answer, both compared casefolded (NFKC) and without
whitespace or soft hyphens. A Unicode minus or a line-end hyphen left in the retrieved text is
a miss: the retrieved text must read as the page does. ``page@k`` only asks for an evidence of
the gold document that starts on the gold page or the page before, whatever its text. Figures are given on the development and test
halves (:mod:`bench.prepare.splits`).

Extraction figures, counted on the product's parse of each PDF (``vdgr_core.parsing``):

- headings: sections with a heading; option-flag headings: headings that are only option flags
  (``-v -x -D``): a fault of the font-heading rules, until parser ``pdf-6`` made option entries
  sections titled with their flags;
- hyphen breaks left: words the PDF breaks at a line end (PDFium marks such a hyphen) that the
  parsed text still shows broken (``sig-nal``, ``sig- nal``);
- Unicode minus / ligatures left: U+2212 and U+FB00-FB06 characters in the parsed text;
- TOC/index pages indexed: pages with five or more dot-leader lines whose text reached a section;
- running lines left: a page's first or last line that recurs (digits ignored) on a quarter of
  the pages and five, or on three when it holds a number, found again in the parsed text;
- definition pairs kept: lines of the form ``-x Description`` (a term and its description side
  by side on the page) whose term and first words stay together in the parsed text.

``--extractors`` compares the extractors' page text (pdfminer.six, from the ``bench`` extra,
with default and tuned layout parameters, and PDFium's, which the product parses with) by
answer recall on the gold page of the dev questions, and time per page.

``--write`` merges this run into ``bench/out/pdf.json`` under ``--label`` (each run keeps the
commit it was made at) and writes the ``pdf`` block of BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import time
import unicodedata
from collections import Counter
from pathlib import Path

from bench.common import REPO, read_jsonl
from bench.prepare.splits import HALVES, half_of

WORK = REPO / "bench" / "work" / "pdf"
QUESTIONS = REPO / "bench" / "data" / "pdf_questions.jsonl"
OUT = REPO / "bench" / "out" / "pdf.json"
PACKAGES = {"bash-doc": {"usr/share/doc/bash/bashref.pdf": "bash/bashref.pdf",
                         "usr/share/doc/bash/bash.pdf": "bash/bash.pdf"},
            "gnuplot-doc": {"usr/share/doc/gnuplot/gnuplot.pdf": "gnuplot/gnuplot.pdf"}}
KS = (1, 5)
_FLAGS = re.compile(r"^[-\u2212\u2013]{1,2}\w+(?:\s+[-\u2212\u2013]{1,2}\w+)*$")
_DOT_LEADER = re.compile(r"(?:\.\s?){5,}\s*\d+\s*$")
_DEF_LINE = re.compile(r"^([-\u2212]\w)\s+([A-Z]\w+(?:\s+\w+){2})")


# ---------------------------------------------------------------------------- data

def fetch(work: Path = WORK) -> Path:
    """Download the Debian packages and lay their PDFs out as a corpus; return the corpus."""
    corpus = work / "corpus"
    if all((corpus / rel).exists() for files in PACKAGES.values() for rel in files.values()):
        return corpus
    debs, x = work / "debs", work / "extract"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(x)], check=True)
    for files in PACKAGES.values():
        for src, rel in files.items():
            (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(x / src, corpus / rel)
    return corpus


def norm(text: str) -> str:
    """Casefolded text without whitespace or soft hyphens (NFKC), for answer matching."""
    text = unicodedata.normalize("NFKC", text.replace("\u00ad", "").replace("\ufffe", ""))
    return re.sub(r"\s+", "", text).casefold()


def pdfium_pages(path: Path) -> list[str]:
    """The text of each page as PDFium extracts it (the reference the figures are counted on)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


# ---------------------------------------------------------------------------- extraction figures

def _toc_pages(pages: list[str]) -> set[int]:
    return {i for i, t in enumerate(pages, 1) if sum(bool(_DOT_LEADER.search(ln)) for ln in t.splitlines()) >= 5}


def _running(pages: list[str]) -> list[re.Pattern]:
    seen: Counter = Counter()
    for t in pages:
        lines = [ln.strip() for ln in t.splitlines() if ln.strip()]
        for ln in {lines[0], lines[-1]} if lines else ():
            seen[re.sub(r"\d+", "#", ln)] += 1
    out = []
    for key, n in seen.items():
        if n >= max(5, len(pages) / 4) or (n >= 3 and "#" in key and re.search(r"[A-Za-z]{3}", key)):
            words = [re.escape(w).replace("\\#", r"\d+").replace("#", r"\d+") for w in key.split()]
            out.append(re.compile(r"\s*".join(words)))
    return out


def extraction_figures(doc, pages: list[str]) -> dict:
    """Counts on one parsed document (see the module docstring)."""
    text = "\n".join(s.text for s in doc.sections)
    flat = " ".join(text.split())
    headings = [s.heading_path[-1] for s in doc.sections if s.heading_path]
    breaks = set()
    for t in pages:
        breaks.update(re.findall(r"(\w{2,})\ufffe\s*(\w{2,})", t))
    left = sum(1 for a, b in breaks if re.search(rf"\b{re.escape(a)}[-\u2010\u00ad]\s*{re.escape(b)}", flat))
    toc = _toc_pages(pages)
    indexed = {p for s in doc.sections for _, p in s.pages}
    running = _running(pages)
    pairs = [m.groups() for t in pages for ln in t.splitlines() if (m := _DEF_LINE.match(ln.strip()))]
    nflat = norm(flat.replace("\u2212", "-"))
    kept = sum(1 for term, desc in pairs if norm(f"{term} {desc}".replace("\u2212", "-")) in nflat)
    return {"sections": len(doc.sections), "headings": len(headings),
            "flag_headings": sum(1 for h in headings if _FLAGS.match(h.strip())),
            "hyphen_breaks": len(breaks), "hyphen_breaks_left": left,
            "minus_left": text.count("\u2212"), "ligatures_left": sum(text.count(chr(c)) for c in range(0xFB00, 0xFB07)),
            "toc_pages": len(toc), "toc_pages_indexed": len(toc & indexed),
            "running_left": sum(len(p.findall(text)) for p in running),
            "def_pairs": len(pairs), "def_pairs_kept": kept}


def parse_all(corpus: Path) -> dict:
    """Parse every PDF of the corpus with the product's parser: figures and seconds per file."""
    from vdgr_core.parsing import parse_bytes

    out = {}
    for files in PACKAGES.values():
        for rel in files.values():
            path = corpus / rel
            t0 = time.perf_counter()
            doc = parse_bytes(path.read_bytes(), "pdf", path.stem, 10**9)
            secs = time.perf_counter() - t0
            out[rel] = {**extraction_figures(doc, pdfium_pages(path)), "parse_s": round(secs, 1)}
            print(f"[pdf] {rel}: {out[rel]}", flush=True)
    return out


# ---------------------------------------------------------------------------- retrieval

def answer_hit(ev: dict, gold: dict) -> bool:
    """The evidence is from the gold document and holds its answer string (normalized)."""
    return ev["source"].endswith(gold["document"].split("/")[-1]) and norm(gold["answer"]) in norm(ev["text"])


def page_hit(ev: dict, gold: dict) -> bool:
    """The evidence is from the gold document and its page (or the page before: a section that
    starts there)."""
    return (ev["source"].endswith(gold["document"].split("/")[-1]) and ev.get("page") is not None
            and gold["page"] - 1 <= ev["page"] <= gold["page"])


def retrieval(corpus: Path, embedding: str, questions: list[dict]) -> dict:
    """Index the corpus (``vdgr index``), ask every question (default configuration): hits by half."""
    from bench.quality.ablation import open_set_index
    from bench.vdgr_cli import ensure_index
    from vdgr_core.query.knowledge_base import KnowledgeBase

    index = WORK / f"index_{embedding}"
    built = ensure_index(corpus, index, ["--embedding", embedding], WORK / "logs" / f"index_{embedding}.log")
    reader, data, embedder, default = open_set_index(index)
    kb = KnowledgeBase(reader, data, default, embedder)
    rows = {h: [] for h in HALVES}
    per_q = {}
    for q in questions:
        evs = [e.model_dump() for e in kb.query(q["question"], domain=q.get("domain"), qid=q["id"]).evidence]
        g = q["gold"]
        first = next((i for i, e in enumerate(evs) if answer_hit(e, g)), None)
        first_page = next((i for i, e in enumerate(evs) if page_hit(e, g)), None)
        rows[half_of(q["id"])].append((first, first_page))
        per_q[q["id"]] = first
    agg = {}
    for h in (*HALVES, "all"):
        rs = rows["dev"] + rows["test"] if h == "all" else rows[h]
        agg[h] = {"n": len(rs), **{f"hit@{k}": sum(r[0] is not None and r[0] < k for r in rs) for k in KS},
                  **{f"page@{k}": sum(r[1] is not None and r[1] < k for r in rs) for k in KS}}
    return {"embedding": embedding, "index_build_s": built.get("build_s"), "halves": agg, "first_hit": per_q}


# ---------------------------------------------------------------------------- extractors

def _pdfminer_pages(path: Path, laparams) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextBox

    return ["\n".join(b.get_text() for b in page if isinstance(b, LTTextBox))
            for page in extract_pages(str(path), laparams=laparams)]


def compare_extractors(corpus: Path, questions: list[dict]) -> dict:
    """Answer recall on the gold page (dev questions) and seconds per page, per extractor."""
    from pdfminer.layout import LAParams

    extractors = {"pdfminer.six LAParams()": lambda p: _pdfminer_pages(p, LAParams()),
                  "pdfminer.six tuned (line_margin 0.3, char_margin 3)":
                      lambda p: _pdfminer_pages(p, LAParams(line_margin=0.3, char_margin=3.0)),
                  "pypdfium2": pdfium_pages}
    dev = [q for q in questions if half_of(q["id"]) == "dev"]
    out = {}
    for name, fn in extractors.items():
        pages, secs, n = {}, 0.0, 0
        for files in PACKAGES.values():
            for rel in files.values():
                t0 = time.perf_counter()
                pages[rel] = fn(corpus / rel)
                secs += time.perf_counter() - t0
                n += len(pages[rel])
        def clean(t: str) -> str:
            return norm(re.sub(r"(\w)[-\u00ad\ufffe]\s*\n\s*(\w)", r"\1\2", t.replace("\u2212", "-")))
        found = sum(norm(q["gold"]["answer"]) in clean(pages[q["gold"]["document"]][q["gold"]["page"] - 1])
                    for q in dev)
        out[name] = {"dev_questions": len(dev), "answer_on_gold_page": found, "ms_per_page": round(1000 * secs / n, 1)}
        print(f"[pdf] extractor {name}: {out[name]}", flush=True)
    return out


# ---------------------------------------------------------------------------- report

def render(report: dict) -> str:
    runs = report["runs"]
    lines = ["### pdf (real manuals: extraction and retrieval)", "",
             "- command: `python -m bench.quality.bench_pdf --label <label> --write` per run (commit per run below)",
             "- corpus: Debian bookworm bash-doc 5.2.15-2 (`bashref.pdf` 196 pages with bookmarks, `bash.pdf`"
             " 87 pages without) and gnuplot-doc 5.4.4+dfsg1-2 (`gnuplot.pdf` 311 pages), fetched by"
             " `apt-get download`; questions: bench/data/pdf_questions.jsonl (answers located first),"
             " dev/test by id hash (bench/prepare/splits.py)",
             "- hit@k: an evidence among the first k from the gold document whose text contains the gold"
             " answer string (whitespace-free, casefolded); page@k: one starting on the gold page or the one before",
             "- headings: sections with a title; option-flag headings: titles that are only option flags, a"
             " fault of the font-heading rules before `after`, and from `pdf-entries` on (parser pdf-6) the"
             " titles of option entries (`OPTIONS > -c`), as in the HTML and text parsers",
             "- parse s: wall seconds of the product's parse on a 2-core machine shared with other jobs (noisy);"
             " the extractor table comes from `--extractors`",
             ""]
    for label, run in runs.items():
        m = run["machine"]
        lines.append(f"- run `{label}`: commit {run['commit']}, {run['date']}, "
                     f"`{m.get('uname', m) if isinstance(m, dict) else m}`")
    lines += ["", "#### extraction (per document)", "",
              "| run | document | headings | option-flag headings | hyphen breaks left | U+2212 left | "
              "TOC/index pages indexed | running lines left | definition pairs kept | parse s |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for label, run in runs.items():
        for rel, f in run["extraction"].items():
            lines.append(f"| {label} | {rel} | {f['headings']} | {f['flag_headings']} | "
                         f"{f['hyphen_breaks_left']} / {f['hyphen_breaks']} | {f['minus_left']} | "
                         f"{f['toc_pages_indexed']} / {f['toc_pages']} | {f['running_left']} | "
                         f"{f['def_pairs_kept']} / {f['def_pairs']} | {f['parse_s']} |")
    lines += ["", "#### retrieval (default query configuration, scoped to the question's domain)", "",
              "| run | embedding | half | questions | hit@1 | hit@5 | page@1 | page@5 |", "|---|---|---|---|---|---|---|---|"]
    for label, run in runs.items():
        for r in run["retrieval"]:
            for h in (*HALVES, "all"):
                a = r["halves"][h]
                lines.append(f"| {label} | {r['embedding']} | {h} | {a['n']} | {a['hit@1']} | {a['hit@5']} | "
                             f"{a['page@1']} | {a['page@5']} |")
    if report.get("extractors"):
        ex = report["extractors"]
        lines += ["", f"#### extractors (page text only; commit {ex['commit']}): gold answer found on its page, dev half", "",
                  "| extractor | answers on the gold page | ms per page |", "|---|---|---|"]
        for name, r in ex["results"].items():
            lines.append(f"| {name} | {r['answer_on_gold_page']} / {r['dev_questions']} | {r['ms_per_page']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    from bench.report.provenance import stamp
    from bench.report.update_benchmarks_md import write_block

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--label", default="current", help="name of this run in the report (e.g. before, after)")
    ap.add_argument("--embedding", default="hashing", help="comma-separated embeddings to index with")
    ap.add_argument("--extractors", action="store_true", help="also compare the extractors' page text")
    ap.add_argument("--write", action="store_true", help="merge into bench/out/pdf.json and BENCHMARKS.md")
    a = ap.parse_args(argv)
    corpus = fetch()
    questions = read_jsonl(QUESTIONS)
    run = {**stamp("python -m bench.quality.bench_pdf " + " ".join(argv if argv is not None else __import__("sys").argv[1:])),
           "extraction": parse_all(corpus),
           "retrieval": [retrieval(corpus, e, questions) for e in a.embedding.split(",")]}
    for r in run["retrieval"]:
        print(f"[pdf] {r['embedding']}: {json.dumps(r['halves'])}", flush=True)
    report = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {"runs": {}}
    report["runs"][a.label] = run
    if a.extractors:
        report["extractors"] = {"commit": run["commit"], "results": compare_extractors(corpus, questions)}
    text = render(report)
    print(text)
    if a.write:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        write_block("pdf", text)


if __name__ == "__main__":
    main()
