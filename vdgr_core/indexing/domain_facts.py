"""What the manifest says of each domain: description, versions, collections, documents, chunks.

Gathered from rows wherever they are made (a build's workers, per staged file; an update's
driver, from a changed domain's committed document rows) and added up: :class:`DomainFacts` is
a sum, so the same facts come out however the rows were split.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import pyarrow as pa

from vdgr_core.safety.secrets import mask_short
from vdgr_core.store.manifest import DomainInfo


@dataclass
class DomainFacts:
    """Per domain: the versions and collections of its indexed documents, their number, and its
    chunks."""

    versions: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    collections: dict[str, set] = field(default_factory=lambda: defaultdict(set))
    n_docs: Counter = field(default_factory=Counter)
    n_chunks: Counter = field(default_factory=Counter)

    @classmethod
    def of_documents(cls, rows: pa.Table) -> "DomainFacts":
        """The facts of ``documents`` rows (those whose status is ``indexed``)."""
        facts = cls()
        for row in rows.select(["domain", "version", "collection", "status"]).to_pylist():
            if row["status"] != "indexed":
                continue
            facts.n_docs[row["domain"]] += 1
            if row["version"]:
                facts.versions[row["domain"]].add(row["version"])
            if row["collection"]:
                facts.collections[row["domain"]].add(row["collection"])
        return facts

    @classmethod
    def of_contents(cls, rows: pa.Table) -> "DomainFacts":
        """The chunk counts of ``contents`` rows."""
        return cls(n_chunks=Counter(rows.column("domain").to_pylist()))

    def add(self, other: "DomainFacts") -> "DomainFacts":
        """These facts and ``other``'s, summed (in place; returns self)."""
        for d, v in other.versions.items():
            self.versions[d] |= v
        for d, v in other.collections.items():
            self.collections[d] |= v
        self.n_docs.update(other.n_docs)
        self.n_chunks.update(other.n_chunks)
        return self

    def to_json(self) -> dict:
        domains = sorted(set(self.versions) | set(self.collections) | set(self.n_docs) | set(self.n_chunks))
        return {d: {"versions": sorted(self.versions.get(d, ())), "collections": sorted(self.collections.get(d, ())),
                    "documents": self.n_docs.get(d, 0), "chunks": self.n_chunks.get(d, 0)} for d in domains}

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping]) -> "DomainFacts":
        facts = cls()
        for d, f in data.items():
            if f["versions"]:
                facts.versions[d] |= set(f["versions"])
            if f["collections"]:
                facts.collections[d] |= set(f["collections"])
            if f["documents"]:
                facts.n_docs[d] += f["documents"]
            if f["chunks"]:
                facts.n_chunks[d] += f["chunks"]
        return facts

    def infos(self, domains: Iterable[str], descriptions: Mapping[str, str]) -> list[DomainInfo]:
        """The manifest's entry of each of ``domains`` and of every domain with documents."""
        names = sorted(set(domains) | {d for d, n in self.n_docs.items() if n})
        return [DomainInfo(d, descriptions.get(d, ""), tuple(sorted(self.versions.get(d, ()))),
                           tuple(sorted(self.collections.get(d, ()))), self.n_docs.get(d, 0),
                           self.n_chunks.get(d, 0)) for d in names]


def descriptions(tasks) -> dict[str, str]:
    """Each domain's description: its ``_meta.yaml`` description (else its title), credentials
    masked like document text (the manifest and router prompts carry it)."""
    desc: dict[str, str] = {}
    for t in tasks:
        if t.folder_metas and t.domain not in desc:
            labels = dict(t.folder_metas[0].labels)
            desc[t.domain] = mask_short(labels.get("description", "") or (t.folder_metas[0].title or ""))
    return desc


__all__ = ["DomainFacts", "descriptions"]
