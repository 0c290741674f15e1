"""Section tree of one E-Manual JSON file (EMNLP 2021 Findings E-Manual data).

Each section has ``title``, ``text`` (paragraphs; the first usually repeats the title) and
``section_hierarchy`` ("section_97>section_98>section_102": ids from the top of the
table of contents down to the section). Only ``title`` and ``text`` are used: ``t5_para``
holds generated questions (leakage) and ``html`` duplicates ``text``.

Quirks handled deterministically (seen in the A11, A21, A71 and Z Fold files):
a section repeated under several ids with identical title, text and URL (kept once: the
id other hierarchies refer to most, then the first), hierarchies that name a different
id last or repeat an id ("section_24>section_24"), and cycles (the node becomes a root).
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from bench.common import clean


@dataclass
class Section:
    """One section of a manual."""

    sid: str
    title: str
    paras: list[str]
    parent: Optional[str] = None
    children: list[str] = field(default_factory=list)


def _own_paragraphs(title: str, text: list) -> list[str]:
    paras = [clean(p) for p in text if clean(p)]
    if paras and paras[0].casefold() == clean(title).casefold():
        paras = paras[1:]
    return paras


def _chain(hierarchy: str, sid: str) -> list[str]:
    ids: list[str] = []
    for x in hierarchy.split(">"):
        x = x.strip()
        if x and (not ids or ids[-1] != x):
            ids.append(x)
    return [x for x in ids if x != sid]


def load_manual(path: Path) -> tuple[list[str], dict[str, Section]]:
    """Read a manual and build its section tree.

    Parameters
    ----------
    path:
        A ``*_manual_corpus.json`` / ``other_manuals/*.json`` file.

    Returns
    -------
    (list of str, dict)
        Root section ids in document order, and every kept section by id (children in
        document order).
    """
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    order = list(raw)
    refs = Counter(x for v in raw.values() for x in _chain(v.get("section_hierarchy", ""), ""))
    groups: dict[tuple, list[str]] = {}
    for sid in order:
        v = raw[sid]
        key = (clean(v.get("title", "")), tuple(clean(p) for p in v.get("text", [])), v.get("section_url", ""))
        groups.setdefault(key, []).append(sid)
    alias: dict[str, str] = {}
    for members in groups.values():
        keep = max(members, key=lambda s: (refs[s], -order.index(s)))
        for s in members:
            alias[s] = keep
    secs: dict[str, Section] = {}
    for sid in order:
        if alias[sid] != sid:
            continue
        v = raw[sid]
        chain = [alias.get(x, x) for x in _chain(v.get("section_hierarchy", ""), sid)]
        chain = [x for x in chain if x in raw and x != sid]
        secs[sid] = Section(sid, clean(v.get("title", "")) or sid, _own_paragraphs(v.get("title", ""), v.get("text", [])),
                            chain[-1] if chain else None)
    for sid in order:                                   # cycle guard: break loops at the node
        if sid not in secs:
            continue
        seen, cur = {sid}, secs[sid].parent
        while cur is not None:
            if cur in seen:
                secs[sid].parent = None
                break
            seen.add(cur)
            cur = secs[cur].parent
    roots = []
    for sid in order:
        if sid in secs:
            p = secs[sid].parent
            (secs[p].children if p else roots).append(sid)
    return roots, secs


def title_path(secs: dict[str, Section], sid: str) -> list[str]:
    """Titles from the root down to section ``sid``."""
    out = []
    cur: Optional[str] = sid
    while cur is not None:
        out.append(secs[cur].title)
        cur = secs[cur].parent
    return out[::-1]
