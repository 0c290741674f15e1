"""Grow the EManual corpus (S10 + 32 manuals) into many product versions, for bench_scale.

Each manual (a domain) gets ``versions`` version folders ``vNNN/`` (``_meta.yaml``: ``version:
"N"``, title ``Version N``) holding the manual's whole tree. Version 1 is the manual as
converted; in version N >= 2 a tenth of the paragraphs are revised (a sentence appended), chosen
by a hash of (document, paragraph, version): the shape of a product line whose manuals change
a little from release to release. Deterministic: the same arguments give the same files.

    python -m bench.prepare.grow_corpus --out bench/work/scale/corpus_100k --versions 10
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

from bench.common import REPO, emanual_all_corpus, fresh_dir, yaml_text

REVISED_SHARE = 10        # one paragraph in ten is revised per version


def _revised(rel: str, index: int, version: int) -> bool:
    h = hashlib.sha256(f"{rel}\x1f{index}\x1f{version}".encode("utf-8")).digest()
    return int.from_bytes(h[:4], "big") % REVISED_SHARE == 0


def revise_markdown(text: str, rel: str, version: int) -> str:
    """``text`` with a tenth of its paragraphs (not headings, not front matter) revised."""
    if version <= 1:
        return text
    lines = text.split("\n")
    out, in_front, paragraph = [], False, 0
    for i, line in enumerate(lines):
        if i == 0 and line == "---":
            in_front = True
        elif in_front and line == "---":
            in_front = False
        elif not in_front and line.strip() and not line.startswith("#"):
            paragraph += 1
            if _revised(rel, paragraph, version):
                line = (f"{line} Revised in release {version}: see the release notes of version "
                        f"{version}.{paragraph % 7} for this change.")
        out.append(line)
    return "\n".join(out)


def grow(source: Path, out: Path, versions: int) -> dict:
    """Write the grown corpus under ``out``; returns counts."""
    fresh_dir(out)
    documents = 0
    for domain in sorted(p for p in source.iterdir() if p.is_dir()):
        target = out / domain.name
        target.mkdir()
        if (domain / "_meta.yaml").exists():
            shutil.copyfile(domain / "_meta.yaml", target / "_meta.yaml")
        files = sorted(p for p in domain.rglob("*") if p.is_file() and p != domain / "_meta.yaml")
        for v in range(1, versions + 1):
            vdir = target / f"v{v:03d}"
            vdir.mkdir()
            (vdir / "_meta.yaml").write_text(yaml_text({"title": f"Version {v}", "version": str(v)}),
                                             encoding="utf-8")
            for f in files:
                rel = f.relative_to(domain)
                dest = vdir / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                if f.suffix == ".md":
                    dest.write_text(revise_markdown(f.read_text(encoding="utf-8"), rel.as_posix(), v),
                                    encoding="utf-8")
                    documents += 1
                else:
                    shutil.copyfile(f, dest)
    return {"versions": versions, "documents": documents}


def change_documents(corpus: Path, share: int = 100, tag: str = "U") -> list[Path]:
    """Append one paragraph to every ``share``-th document in path order (1% for 100)."""
    docs = sorted(p for p in corpus.rglob("*.md"))
    changed = docs[::share]
    for i, path in enumerate(changed):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.rstrip("\n") + f"\n\nService bulletin {tag}{i}: this procedure was revised "
                        f"for firmware release {tag}{i:03d}; follow the steps above.\n", encoding="utf-8")
    return changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--versions", type=int, required=True)
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    args = ap.parse_args(argv)
    counts = grow(emanual_all_corpus(args.work), args.out, args.versions)
    print(counts)
    if not counts.get("documents"):
        # a bench that went on would time builds of an empty corpus and stamp it as grown
        print(f"grow_corpus: no documents grown into {args.out} (is the EManual source there?)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
