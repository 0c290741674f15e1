"""BM25 over the labels of the table of contents (what route 2 matches the question against).

A directory's label is its title path below the domain (document, folders, headings) plus its
summary. Built once per opened index as one sparse matrix of term counts; a query's BM25 scores
(Robertson & Zaragoza 2009, k1 = 1.2, b = 0.75) are computed over the query's columns with
statistics from the labels the reader may see.
Tokens are the query module's (lower-cased, stop words dropped, light stemming).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from vdgr_core.query.data import Directories
from vdgr_core.query.textutil import _stem, terms

K1, B = 1.2, 0.75


def label_text(d: Directories, i: int) -> str:
    """The words of directory ``i`` that route 2 matches: title path below the domain + summary."""
    return " ".join(d.full_path[i][1:]) + "\n" + (d.summary[i] or "")


def _stems(text: str) -> list[str]:
    return [_stem(t) for t in terms_all(text)]


def terms_all(text: str) -> list[str]:
    """Content words of ``text`` with repeats (BM25 needs term frequencies)."""
    from vdgr_core.query.textutil import tokens
    from vdgr_core.store.tantivy_shard import _STOP

    return [t for t in tokens(text) if t not in _STOP and (len(t) > 1 or t.isdigit())]


class LabelIndex:
    """BM25 weights of every directory label.

    ``labelled[i]`` is False for domain roots (their label is empty) and label-less nodes.
    """

    def __init__(self, directories: Directories):
        d = directories
        vocab: dict[str, int] = {}
        rows, cols, vals = [], [], []
        lengths = np.zeros(len(d), dtype=np.float64)
        for i in range(len(d)):
            if len(d.full_path[i]) <= 1:
                continue
            toks = _stems(label_text(d, i))
            lengths[i] = len(toks)
            counts: dict[int, int] = {}
            for t in toks:
                j = vocab.setdefault(t, len(vocab))
                counts[j] = counts.get(j, 0) + 1
            for j, n in counts.items():
                rows.append(i)
                cols.append(j)
                vals.append(n)
        self.vocab = vocab
        self.labelled = lengths > 0
        self._lengths = lengths
        self._tf = sp.csc_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)), shape=(len(d), len(vocab)))

    def scores(self, question: str, visible: Optional[np.ndarray] = None) -> np.ndarray:
        """BM25 score of every directory label for ``question`` (0 where nothing matches).

        Document frequencies, the label count and the average label length come from the
        labels in ``visible`` only (the directories the reader may see), so a restricted
        heading changes no outsider's ranking; rows outside ``visible`` score 0.
        """
        out = np.zeros(self._tf.shape[0])
        cols = sorted({self.vocab[s] for s in (_stem(t) for t in terms(question)) if s in self.vocab})
        if not cols:
            return out
        vis = self.labelled if visible is None else (self.labelled & visible)
        n_docs = int(vis.sum())
        if n_docs == 0:
            return out
        avg = float(self._lengths[vis].mean())
        tf = self._tf
        for j in cols:
            lo, hi = tf.indptr[j], tf.indptr[j + 1]
            rows, counts = tf.indices[lo:hi], tf.data[lo:hi]
            keep = vis[rows]
            rows, counts = rows[keep], counts[keep]
            if len(rows) == 0:
                continue
            df = float(len(rows))
            idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
            norm = K1 * (1.0 - B + B * self._lengths[rows] / avg)
            out[rows] += idf * counts * (K1 + 1.0) / (counts + norm)
        return out
