"""Helpers shared by the benchmark converters: paths, slugs, YAML, Markdown, JSONL.

Everything here is deterministic: the same input gives byte-identical files.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Iterable, Mapping, Optional

import yaml

REPO = Path(__file__).resolve().parent.parent
SHARED_BENCH = Path(os.environ.get("VDGR_BENCH_DATA", REPO.parent / "shared" / "bench"))

_SLUG = re.compile(r"[^a-z0-9]+")


def slug(title: str, max_len: int = 48) -> str:
    """Filesystem-safe lower-case slug of a title ("untitled" when nothing is left).

    Examples
    --------
    >>> slug("Messages (SMS/MMS)")
    'messages-sms-mms'
    """
    s = _SLUG.sub("-", title.lower()).strip("-")[:max_len].strip("-")
    return s or "untitled"


def clean(text: str) -> str:
    """Collapse all whitespace (including newlines) to single spaces."""
    return " ".join(str(text).split())


def yaml_text(data: Mapping) -> str:
    """Block-style YAML with keys in the given order and Unicode kept."""
    return yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, width=100)


def write_meta(folder: Path, data: Mapping) -> None:
    """Write ``folder/_meta.yaml``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_meta.yaml").write_text(yaml_text(data), encoding="utf-8")


_MD_BLOCK_START = re.compile(r"^(\s*)(#|>|```|~~~|<|=+\s*$|-+\s*$|\*\s*\*\s*\*|\[[^\]]+\]:)")


def md_paragraph(text: str) -> str:
    """One paragraph of plain text made safe for Markdown: a single line that cannot
    start a heading, setext underline, fence, quote, HTML block or link definition."""
    t = clean(text)
    m = _MD_BLOCK_START.match(t)
    if m:
        t = t[: m.start(2)] + "\\" + t[m.start(2):]
    return t


def md_heading(level: int, title: str) -> str:
    """An ATX heading line; a trailing ``#`` run is escaped so it is not a closing sequence."""
    t = clean(title)
    if t.endswith("#"):
        t = t[:-1] + "\\#"
    return "#" * level + " " + t


def front_matter(data: Mapping) -> str:
    """YAML front matter block (``---`` lines) followed by a blank line."""
    return "---\n" + yaml_text(data) + "---\n\n"


def write_jsonl(path: Path, rows: Iterable[Mapping]) -> int:
    """Write rows as JSON lines (keys in insertion order, UTF-8); return the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: Path) -> list[dict]:
    """Read a JSON-lines file (blank lines skipped)."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def fresh_dir(path: Path) -> Path:
    """Remove ``path`` if it exists and create it empty."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def tree_hash(root: Path) -> str:
    """sha256 over the sorted relative paths and bytes of every file under ``root``."""
    h = hashlib.sha256()
    for p in sorted(x for x in root.rglob("*") if x.is_file()):
        h.update(p.relative_to(root).as_posix().encode("utf-8") + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def emanual_all_corpus(work: Path) -> Path:
    """The EManual corpus (S10 + 32 manuals) for the performance benchmarks, converted once."""
    import subprocess
    import sys

    out = work / "perf_emanual_all"
    # an empty corpus folder is what a failed conversion leaves: convert again
    if not (out / "corpus").is_dir() or not any((out / "corpus").iterdir()):
        subprocess.run([sys.executable, "-m", "bench.prepare.convert_emanual", "--out", str(out), "--all"],
                       cwd=REPO, check=True)
    return out / "corpus"


def run_timed(cmd: list[str]) -> tuple[float, str]:
    """Run ``cmd`` from the repository root, offline; (wall seconds, stdout). Exits on failure."""
    import subprocess
    import sys
    import time

    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        sys.stderr.write(out.stdout + out.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, out.stdout


def vdgr_command() -> str:
    """The `vdgr` script of the running interpreter's environment."""
    import sys

    return str(Path(sys.executable).with_name("vdgr"))


def perf_arguments(description: str, out_name: str, argv=None, repeats: Optional[int] = None):
    """The options the indexing benchmarks share: --work, --embedding, --out (and --repeats,
    with this default, where a benchmark repeats its runs)."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--embedding", default="minilm", choices=["minilm", "hashing"])
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / out_name)
    if repeats is not None:
        ap.add_argument("--repeats", type=int, default=repeats, help="runs of each side, the best kept")
    return ap.parse_args(argv)
