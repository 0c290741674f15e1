"""Checks that document-derived text reaches a model only inside escaped untrusted-data blocks."""
from __future__ import annotations

import hashlib
import re

from vdgr_core.llm.untrusted import UNTRUSTED_NOTICE

BLOCK = re.compile(r"<<<([A-Z0-9_]+) id=([0-9a-f]{12})>>>\n(.*?)\n<<<END \1 id=\2>>>", re.S)


def split_blocks(content: str) -> tuple[str, list[str]]:
    """(the text outside every well-formed block, the bodies of the blocks).

    Raises AssertionError when a block body still holds a marker-like run or its id is not the
    digest of its body (a forged or broken block).
    """
    bodies = []
    for m in BLOCK.finditer(content):
        body = m.group(3)
        assert "<<<" not in body and ">>>" not in body and "<|" not in body and "|>" not in body, body
        assert m.group(2) == hashlib.sha256(body.encode("utf-8")).hexdigest()[:12]
        bodies.append(body)
    outside = BLOCK.sub("", content).replace(UNTRUSTED_NOTICE, "")
    return outside, bodies


def assert_only_inside_blocks(messages, phrases) -> list[str]:
    """Every phrase (case-insensitive) is absent outside the blocks of every message, and no
    stray marker is left outside; returns all block bodies seen."""
    bodies: list[str] = []
    for msg in messages:
        outside, inner = split_blocks(msg["content"])
        assert "<<<" not in outside and ">>>" not in outside, outside
        low = outside.lower()
        for phrase in phrases:
            assert phrase.lower() not in low, (phrase, outside)
        bodies += inner
    return bodies
