"""Prompt-injection signals in document text: deterministic flags stored per chunk.

A flag does not change what is indexed or retrieved: a manual may legitimately say "ignore
the previous instructions if the LED is green". Flags are stored on each content row
(``contents.flags``) and listed in the query trace when a flagged chunk is in the evidence, so a
reader or an owner can see that the model was shown text that reads like instructions. The
defence itself is elsewhere: every document text reaches a model inside the escaped
delimiters of :mod:`vdgr_core.llm.untrusted`.

Flags (a sorted tuple of names):

``override``
    "ignore / disregard / forget / override (all) previous / prior / above instructions" and
    the like.
``role``
    a fake conversation turn: a line starting with ``system:``, ``assistant:``, ``developer:``,
    ``### System``, ``[system]``; chat-template tokens such as ``<|im_start|>``, ``[INST]``.
``persona``
    "you are now ...", "from now on you ...", "new instructions:", "reveal the system prompt".
``delimiter``
    runs of three or more ``<`` or ``>`` (the shape of the untrusted-data markers), or tags such
    as ``</document>``, ``</evidence>``, ``<system>`` that try to close or open a prompt block.
"""
from __future__ import annotations

import re

from vdgr_core.safety.casefold import fold_lower

# (flag, pattern, literals): every match of the pattern holds one of the literals in the text
# as vdgr_core.safety.casefold.fold_lower lower-cases it. A literal test is ~50x cheaper than a
# case-insensitive pattern, and most chunks hold none.
_PATTERNS = (
    ("override", re.compile(
        r"(?i)\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+|any\s+|the\s+|your\s+|these\s+)*"
        r"(?:previous|prior|above|earlier|preceding|original|system|safety)\s+"
        r"(?:instructions?|prompts?|rules|directions|guidelines|context|messages?)\b"),
     ("ignore", "disregard", "forget", "override", "bypass", "skip")),
    ("role", re.compile(
        r"(?im)^\s*(?:#{1,6}\s*|\[|\*\*)?(?:system|assistant|developer)\s*(?:\]|\*\*)?\s*:"
        r"|<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]|<</?SYS>>"),
     ("system", "assistant", "developer", "<|", "inst]", "sys>>")),
    ("persona", re.compile(
        r"(?i)\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+(?:you|always|only|respond|answer)\b"
        r"|\bnew\s+instructions?\s*:|\b(?:reveal|print|show|repeat|output)\s+(?:the\s+|your\s+)?"
        r"(?:system|hidden|initial)\s+prompt\b"),
     ("now", "instruction", "prompt")),
    ("delimiter", re.compile(
        r"<{3,}|>{3,}|</?\s*(?:system|instructions?|evidence|document|context|untrusted)\s*>", re.IGNORECASE),
     ("<", ">>>")),
)


def injection_flags(text: str) -> tuple[str, ...]:
    """The injection signals found in ``text`` (sorted names, empty when none).

    Parameters
    ----------
    text : str
        A chunk's title, path and text (or any document-derived text).

    Returns
    -------
    tuple of str
        Names among ``override``, ``role``, ``persona``, ``delimiter``.
    """
    if not text:
        return ()
    low = fold_lower(text)
    return tuple(sorted(name for name, pattern, literals in _PATTERNS
                        if (low is None or any(lit in low for lit in literals)) and pattern.search(text)))


__all__ = ["injection_flags"]
