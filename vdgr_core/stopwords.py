"""The stop-word list shared by BM25 query terms, directory labels and the query's content words.

One list, so that what a BM25 shard's query drops (``store/tantivy_shard.py``), what a layout's
label postings leave out (``labels.py``) and what the query side counts as a content word
(``query/textutil.py``) agree. The answer screen keeps a list of its own
(``query/guardrails.py``): it measures sentence support, not retrieval.
"""
from __future__ import annotations

STOP_WORDS: frozenset[str] = frozenset(
    "a an and are as at be by can do does for from how i if in into is it its me my of on or "
    "please should so that the their then there these this to use using was what when where "
    "which who why will with you your".split()
)

__all__ = ["STOP_WORDS"]
