"""BM25 over the labels of the table of contents (what route 2 matches the question against).

A directory's label is its title path below the domain (document, folders, headings) plus its
summary (:mod:`vdgr_core.labels`). Each domain's layout stores the labels as an inverted index
(stem key -> directories and term counts) with every label's length, memory-mapped; a query
reads the postings of its own stems only. BM25 (Robertson & Zaragoza 2009, k1 = 1.2,
b = 0.75) takes its statistics (label count, average length, document frequencies) from the
labels the reader may see in the routed domains, so a restricted heading changes no outsider's
ranking.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from vdgr_core.labels import label_key
from vdgr_core.query.scope import QueryScope
from vdgr_core.query.textutil import terms
from vdgr_core.tokens import stem as _stem
from vdgr_core.query.view import IndexView

K1, B = 1.2, 0.75


def query_keys(question: str) -> np.ndarray:
    """The label keys of the question's stems (distinct, sorted)."""
    return np.unique(np.array([label_key(_stem(t)) for t in terms(question)], dtype=np.uint64))


class LabelIndex:
    """Label BM25 over the layouts of an :class:`IndexView`."""

    def __init__(self, view: IndexView):
        self._view = view

    def _postings(self, domain: str, keys: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(key, directories, term counts) of each question key the domain's labels hold."""
        lay = self._view.layout(domain)
        vocab = lay.array("label_keys")
        if not len(vocab) or not len(keys):
            return []
        pos = np.minimum(np.searchsorted(vocab, keys), len(vocab) - 1)
        ptr, dirs, tf = lay.array("label_ptr"), lay.array("label_dirs"), lay.array("label_tf")
        out = []
        for key, p in zip(keys, pos):
            if vocab[p] == key:
                lo, hi = int(ptr[p]), int(ptr[p + 1])
                out.append((int(key), np.asarray(dirs[lo:hi], dtype=np.int64),
                            np.asarray(tf[lo:hi], dtype=np.float64)))
        return out

    def scores(self, question: str, scope: QueryScope, domains: Sequence[str]) -> dict[int, float]:
        """BM25 score of every directory label of ``domains`` that the question matches and
        that ``scope`` lets the reader see (global directory rows; only scores above 0)."""
        keys = query_keys(question)
        domains = [d for d in domains if d in self._view.code]
        if not len(keys) or not domains:
            return {}
        visible = self._view.directories.visible(scope.groups)
        n_docs, total_len = 0, 0.0
        df: dict[int, float] = {}
        found = {}
        for d in domains:
            lengths = np.asarray(self._view.layout(d).array("label_len"), dtype=np.float64)
            seen = visible.local(d) & (lengths > 0)
            n_docs += int(seen.sum())
            total_len += float(lengths[seen].sum())
            found[d] = (lengths, self._postings(d, keys))
            for key, rows, _ in found[d][1]:
                df[key] = df.get(key, 0.0) + float(seen[rows].sum())
        if n_docs == 0:
            return {}
        avg = total_len / n_docs
        in_scope = self._view.directories.mask(scope.with_domains(domains))
        out: dict[int, float] = {}
        for d in domains:
            lengths, postings = found[d]
            mask = in_scope.local(d) & (lengths > 0)
            acc = np.zeros(len(lengths))
            for key, rows, tf in postings:
                keep = mask[rows]
                rows, tf = rows[keep], tf[keep]
                if not len(rows):
                    continue
                idf = np.log(1.0 + (n_docs - df[key] + 0.5) / (df[key] + 0.5))
                acc[rows] += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * lengths[rows] / avg))
            base = self._view.to_global("dir", d, 0)
            out.update({base + int(j): float(acc[j]) for j in np.flatnonzero(acc > 0)})
        return out
