"""Credentials masked per corpus: how much documentation the credential detector removes.

``python -m bench.quality.bench_secrets [--show N] [--json OUT]``

The benchmark corpora hold no credentials (public manuals, Wikipedia paragraphs, product
documentation), so every mask counted here is a false positive: documentation text that an
index would lose. Each document goes through the product's two masking passes
(:func:`vdgr_core.indexing.mask.mask_raw` on the decoded text, then
:func:`~vdgr_core.indexing.mask.mask_parsed` on the parsed document), and the masks are counted
per corpus and per kind.

Corpora: the EManual manuals, the DCD corpus and the MuSiQue paragraphs, converted by their
``bench/prepare/convert_*`` scripts into ``bench/work`` when missing; and the Debian Reference (English
HTML, 14 chapters), fetched with ``apt-get download debian-reference-en`` into
``bench/work/secrets`` and unpacked with ``dpkg-deb -x`` (never committed; skipped when
``apt-get download`` fails); and the Debian PDF manuals of :mod:`bench.quality.bench_pdf` when that
benchmark has fetched them, and the Debian reference manuals of
:mod:`bench.quality.bench_refdocs` when that benchmark has fetched them: its first set (bind9,
haproxy, git, zsh, rsyslog), its second (sqlite3, python3.11) and its third (ffmpeg, vim,
debian-reference), the last two written after the masking rules. Masks are also given per 1,000 documents. ``--show N`` prints N masked lines per
corpus with the mask in place (from the raw text and from the parsed sections), to read what
was removed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

from bench.common import REPO, emanual_all_corpus
from schemas.config import LimitsConfig
from vdgr_core.indexing.mask import mask_parsed, mask_raw
from vdgr_core.parsing import format_for_path, is_binary_format, parse_bytes, parse_document
from vdgr_core.parsing.decode import decode_document
from vdgr_core.safety.secrets import RULES_VERSION

WORK = REPO / "bench" / "work"


def _converted(name: str, module: str) -> Optional[Path]:
    out = WORK / name
    if not (out / "corpus").is_dir():
        done = subprocess.run([sys.executable, "-m", module, "--out", str(out)], cwd=REPO,
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{name}: conversion failed, skipped ({done.stderr.strip()[-200:]})", file=sys.stderr)
            return None
    return out / "corpus"


def debian_reference() -> Optional[Path]:
    """The Debian Reference HTML chapters, fetched and unpacked once; None when unavailable."""
    root = WORK / "secrets"
    html = root / "unpacked" / "usr" / "share" / "debian-reference"
    if not html.is_dir():
        debs = root / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        got = subprocess.run(["apt-get", "download", "debian-reference-en"], cwd=debs,
                             capture_output=True, text=True)
        found = sorted(debs.glob("debian-reference-en_*.deb"))
        if got.returncode != 0 or not found:
            print("debian-reference: apt-get download failed, skipped", file=sys.stderr)
            return None
        subprocess.run(["dpkg-deb", "-x", str(found[-1]), str(root / "unpacked")], check=True)
    return html


def corpora() -> dict[str, Path]:
    found = {"debian_reference": debian_reference(), "emanual": emanual_all_corpus(WORK),
             "dcd": _converted("dcd", "bench.prepare.convert_dcd"), "musique": _converted("musique", "bench.prepare.convert_musique")}
    pdf = WORK / "pdf" / "corpus"          # the PDF manuals of bench/quality/bench_pdf.py, when fetched
    found["pdf_manuals"] = pdf if pdf.is_dir() else None
    # the reference manuals of bench/quality/bench_refdocs.py's three sets, when fetched
    for name, folder in (("debian_refdocs", "debian"), ("debian_refdocs_2", "debian2"), ("debian_refdocs_3", "debian3")):
        refdocs = WORK / folder / "corpus"
        found[name] = refdocs if refdocs.is_dir() else None
    return {name: path for name, path in found.items() if path is not None}


def _documents(root: Path):
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.name.startswith("_") and format_for_path(str(path)) is not None:
            if root.name == "debian-reference" and not path.name.endswith(".en.html"):
                continue
            yield path


def _masked_lines(text: str) -> list[str]:
    return [line.strip()[:160] for line in text.splitlines() if "[REDACTED:" in line]


def measure(root: Path, show: int = 0) -> dict:
    """Masks of every document under ``root``: documents, masks, by kind, examples."""
    limits = LimitsConfig()
    kinds: Counter = Counter()
    docs = masked_docs = 0
    examples: list[str] = []
    for path in _documents(root):
        data = path.read_bytes()
        fmt = format_for_path(str(path))
        try:
            if is_binary_format(fmt):      # as vdgr_core.indexing.document.process_document does
                raw, early, text = "", (), ""
                parsed, late = mask_parsed(parse_bytes(data, fmt, path.stem, limits.max_file_bytes), raw)
            else:
                raw = decode_document(data, limits.max_file_bytes)
                masked = mask_raw(raw, markup=fmt == "html")
                early, text = masked.findings, masked.text
                parsed, late = mask_parsed(parse_document(masked.text, fmt, path.stem), raw)
        except Exception:           # a document the product would dead-letter: no rows, no masks
            continue
        findings = early + late
        docs += 1
        kinds.update(f.kind for f in findings)
        masked_docs += bool(findings)
        if len(examples) < show:
            shown = dict.fromkeys(_masked_lines(text) + _masked_lines("\n".join(s.text for s in parsed.sections)))
            examples += [f"{path.relative_to(root)}: {line}" for line in shown]
    masks = sum(kinds.values())
    return {"documents": docs, "documents_masked": masked_docs, "masks": masks,
            "masks_per_1000_documents": round(1000 * masks / max(1, docs), 1),
            "by_kind": dict(sorted(kinds.items())), "examples": examples[:show]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--show", type=int, default=0, help="masked lines to print per corpus")
    ap.add_argument("--json", type=Path, help="write the figures here")
    a = ap.parse_args(argv)
    out = {"rules": RULES_VERSION, "corpora": {}}
    for name, root in corpora().items():
        m = measure(root, a.show)
        out["corpora"][name] = m
        print(f"{name:<17} {m['documents']:>6,d} documents  {m['masks']:>5,d} masks in "
              f"{m['documents_masked']:,d} documents ({m['masks_per_1000_documents']} per 1,000)  {m['by_kind']}")
        for line in m["examples"]:
            print(f"    {line}")
    if a.json:
        a.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
