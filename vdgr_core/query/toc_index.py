"""BM25 over the labels of the table of contents (what route 2 matches the question against).

A directory's label is its title path below the domain (document, folders, headings) plus its
summary. Built once per opened index as one sparse matrix of BM25 weights (Robertson & Zaragoza
2009, k1 = 1.2, b = 0.75), so a query's scores for every directory are one sparse column sum.
Tokens are the query module's (lower-cased, stop words dropped, light stemming).
"""
from __future__ import annotations

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
        n_docs = max(int(self.labelled.sum()), 1)
        tf = sp.csr_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)), shape=(len(d), len(vocab)))
        df = np.bincount(np.asarray(cols, dtype=np.int64), minlength=len(vocab)).astype(np.float64)
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        avg = float(lengths[self.labelled].mean()) if self.labelled.any() else 1.0
        norm = K1 * (1.0 - B + B * lengths / avg)
        tf = tf.tocoo()
        w = idf[tf.col] * tf.data * (K1 + 1.0) / (tf.data + norm[tf.row])
        self._w = sp.csc_matrix((w, (tf.row, tf.col)), shape=tf.shape)

    def scores(self, question: str) -> np.ndarray:
        """BM25 score of every directory label for ``question`` (0 where nothing matches)."""
        cols = sorted({self.vocab[s] for s in (_stem(t) for t in terms(question)) if s in self.vocab})
        if not cols:
            return np.zeros(self._w.shape[0])
        return np.asarray(self._w[:, cols].sum(axis=1)).ravel()
