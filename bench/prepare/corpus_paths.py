"""List the section title paths a corpus folder yields under DESIGN.md's corpus contract.

Used to check converters without building an index: domain / folder titles (``_meta.yaml``
``title`` or the folder name) / document title / heading titles, for every section with
text, as parsed by :mod:`vdgr_core.parsing`.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from schemas.config import LimitsConfig
from vdgr_core.parsing import format_for_path, parse_bytes


def _folder_title(folder: Path) -> str:
    meta = folder / "_meta.yaml"
    if meta.exists():
        data = yaml.safe_load(meta.read_text(encoding="utf-8")) or {}
        if data.get("title"):
            return str(data["title"])
    return folder.name


def corpus_section_paths(root: Path) -> dict[tuple[str, ...], str]:
    """Map every section path with text to the corpus-relative file holding it.

    Parameters
    ----------
    root:
        Corpus folder (``<domain>/...``).

    Returns
    -------
    dict
        ``(domain, folder titles..., document title, headings...) -> "rel/path.md"``;
        the first file wins when two files yield the same path.
    """
    root = Path(root)
    out: dict[tuple[str, ...], str] = {}
    for f in sorted(root.rglob("*")):
        fmt = format_for_path(str(f)) if f.is_file() else None
        if not fmt:
            continue
        rel = f.relative_to(root)
        titles = [rel.parts[0]] + [_folder_title(root.joinpath(*rel.parts[:i + 1]))
                                   for i in range(1, len(rel.parts) - 1)]
        doc = parse_bytes(f.read_bytes(), fmt, f.stem, LimitsConfig().max_file_bytes)
        for s in doc.sections:
            if s.text.strip():
                out.setdefault(tuple(titles + [doc.title] + list(s.heading_path)), rel.as_posix())
    return out
