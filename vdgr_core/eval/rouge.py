"""ROUGE-L F1 on lower-cased word tokens (own implementation, no dependency)."""
from __future__ import annotations

import re

_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric word tokens.

    Examples
    --------
    >>> tokenize("Tap  Settings > Wi-Fi!")
    ['tap', 'settings', 'wi', 'fi']
    """
    return _TOKEN.findall((text or "").lower())


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists (O(len(a)*len(b)))."""
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l_f1(candidate: str, reference: str) -> float:
    """ROUGE-L F1 (beta = 1) between a candidate and a reference text.

    Parameters
    ----------
    candidate, reference:
        Free text; tokenized with :func:`tokenize`.

    Returns
    -------
    float
        ``2PR / (P + R)`` with P = LCS/len(candidate), R = LCS/len(reference); 0.0 when
        either side has no tokens or nothing is shared.

    Examples
    --------
    >>> rouge_l_f1("the cat sat", "the cat sat")
    1.0
    >>> round(rouge_l_f1("the cat", "the cat sat on the mat"), 3)
    0.5
    """
    c, r = tokenize(candidate), tokenize(reference)
    if not c or not r:
        return 0.0
    lcs = lcs_length(c, r)
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(c), lcs / len(r)
    return 2 * p * rec / (p + rec)
