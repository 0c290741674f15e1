"""A small real index (LanceDB tables + tantivy shards + manifest) for query tests.

Three domains: ``Galaxy_S10`` in versions 1.0 and 2.0, ``Galaxy_S10e`` (a near-name product)
and ``HR_Policies`` whose document "Salary Bands" is restricted to group ``hr``. Vectors come
from :class:`HashingEmbedder` so building takes well under a second.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pyarrow as pa

from schemas import tables as T
from vdgr_core import ids
from vdgr_core.embedding import HashingEmbedder
from vdgr_core.entities import entity_importance, extract_terms
from vdgr_core.sentences import split_sentences
from vdgr_core.store.manifest import DomainInfo
from vdgr_core.store.tantivy_shard import build_shard, subshard_of
from tests.support.commit_tables import commit_tables

DIM = 64
SECRET_TITLE = "Salary Bands"
SECRET_WORD = "Quorvex"   # appears only in the restricted document


@dataclass(frozen=True)
class Doc:
    domain: str
    collection: str
    version: str
    title: str
    sections: tuple[tuple[str, tuple[str, ...]], ...]
    acl: tuple[str, ...] = ()


def _s10(version: str) -> list[Doc]:
    android = "Android 10" if version == "2.0" else "Android 9"
    return [
        Doc("Galaxy_S10", "Manual", version, "Getting Started", (
            ("Battery", (
                f"Charge the Galaxy S10 battery with the USB-C cable. The phone runs {android}.",
                "Battery saver mode reduces background activity. Enable Battery saver in Settings.",
            )),
            ("Wireless PowerShare", (
                "Wireless PowerShare lets the Galaxy S10 charge another device. "
                "Place the Galaxy Buds case on the back of the phone.",
                "Wireless PowerShare stops when the battery level drops below 30 percent.",
            )),
        )),
        Doc("Galaxy_S10", "Manual", version, "Connections", (
            ("Wi-Fi", (
                "Connect to a Wi-Fi network from the quick panel. Wi-Fi Direct shares files without a router.",
            )),
            ("Bluetooth", (
                "Pair Bluetooth headphones from Settings. Bluetooth uses little battery.",
            )),
            ("NFC payments", (
                "NFC payments need NFC switched on. Hold the phone near the payment terminal.",
            )),
        )),
    ]


DOCS: tuple[Doc, ...] = (
    *_s10("1.0"),
    *_s10("2.0"),
    Doc("Galaxy_S10e", "Manual", "1.0", "Getting Started", (
        ("Fingerprint sensor", (
            "The Galaxy S10e fingerprint sensor sits in the side key. Register a fingerprint in Settings.",
        )),
        ("Display", ("The Galaxy S10e has a flat 5.8 inch display with Eye comfort shield.",)),
    )),
    Doc("HR_Policies", "Policies", "2024", "Leave Policy", (
        ("Annual leave", ("Employees get 25 days of annual leave. Request leave in the HR portal.",)),
        ("Sick leave", ("Report sick leave to your manager before 10 am.",)),
    )),
    Doc("HR_Policies", "Policies", "2024", SECRET_TITLE, (
        ("Engineering bands", (
            f"{SECRET_WORD} band E5 pays between 90000 and 120000 euros per year.",
        )),
        ("Band review", (f"{SECRET_WORD} bands are reviewed every March by the compensation board.",)),
    ), acl=("hr",)),
)

DESCRIPTIONS = {
    "Galaxy_S10": "Samsung Galaxy S10 smartphone user manual",
    "Galaxy_S10e": "Samsung Galaxy S10e smartphone user manual",
    "HR_Policies": "Company human resources policies: leave, salaries",
}


def _dir_row(domain, collection, version, full_path, parent, kind, acl, summary, source=""):
    return {
        "node_id": ids.directory_id(domain, version, tuple(full_path)),
        "full_path": list(full_path), "path_text": " > ".join(full_path),
        "parent_id": parent, "domain": domain, "collection": collection, "version": version,
        "title": full_path[-1], "level": len(full_path) - 1, "kind": kind, "acl": list(acl),
        "acl_text": T.acl_text(acl), "public": not acl, "source": source, "summary": summary,
    }


def build_tiny_index(index_dir: str, docs=DOCS, descriptions=DESCRIPTIONS) -> str:
    """Build and commit the tiny index in ``index_dir``; return ``index_dir``.

    ``descriptions`` names the domains of the manifest (every domain of ``docs`` needs one).
    """
    emb = HashingEmbedder(DIM)
    dirs: dict[str, dict] = {}
    contents: list[dict] = []
    edges: list[dict] = []

    def add_dir(row):
        if row["node_id"] not in dirs:
            dirs[row["node_id"]] = row
            if row["parent_id"]:
                edges.append(_edge(T.CONTAINS, row["parent_id"], row["node_id"], row["domain"], 1.0))
        return row["node_id"]

    for d in docs:
        root = add_dir(_dir_row(d.domain, "", "", [d.domain], "", "domain", (), descriptions[d.domain]))
        coll = add_dir(_dir_row(d.domain, d.collection, "", [d.domain, d.collection], root, "folder", (),
                                f"{d.collection} of {d.domain}"))
        source = f"{d.domain}/{d.collection}/{d.title.replace(' ', '_')}.md"
        doc_path = [d.domain, d.collection, d.title]
        doc_node = add_dir(_dir_row(d.domain, d.collection, d.version, doc_path, coll, "document", d.acl,
                                    "Sections: " + ", ".join(t for t, _ in d.sections), source))
        pos = 0
        for sec_title, chunks in d.sections:
            path = doc_path + [sec_title]
            sec = add_dir(_dir_row(d.domain, d.collection, d.version, path, doc_node, "section", d.acl,
                                   split_sentences(chunks[0])[0], source))
            for text in chunks:
                cid = ids.chunk_id(source + "@" + d.version, text)
                terms = extract_terms(text)
                contents.append({
                    "chunk_id": cid, "doc_id": ids.doc_id(source + "@" + d.version), "text": text,
                    "source": source, "title": sec_title, "path": path, "parent_id": sec,
                    "domain": d.domain, "collection": d.collection, "version": d.version,
                    "acl": list(d.acl), "acl_text": T.acl_text(d.acl), "public": not d.acl,
                    "position": pos, "n_tokens": len(text.split()), "summary": split_sentences(text)[0],
                    "entities": [t.norm for t in terms], "text_hash": ids.content_hash(text),
                    "_terms": terms,
                })
                edges.append(_edge(T.CONTAINS, sec, cid, d.domain, 1.0))
                pos += 1

    cvec = emb.embed([" > ".join(c["path"][1:]) + "\n" + c["text"] for c in contents])
    for c, v in zip(contents, cvec):
        c["vector"] = v.tolist()
    drows = sorted(dirs.values(), key=lambda r: r["node_id"])
    dvec = emb.embed([" > ".join(r["full_path"][1:]) + "\n" + r["summary"] for r in drows])
    for r, v in zip(drows, dvec):
        r["vector"] = v.tolist()

    # entities, has_entity and co-occurrence edges per domain
    ent: dict[tuple[str, str], dict] = {}
    mentions: dict[tuple[str, str], list[int]] = defaultdict(list)
    cooc: Counter = Counter()
    n_chunks = Counter(c["domain"] for c in contents)
    for i, c in enumerate(contents):
        for t in c["_terms"]:
            key = (c["domain"], t.norm)
            e = ent.setdefault(key, {"name": t.name, "kind": t.kind, "freq": 0, "chunks": set(), "docs": set()})
            count = max(1, c["text"].lower().count(t.name.lower()))
            e["freq"] += count
            e["chunks"].add(i)
            e["docs"].add(c["doc_id"])
            edges.append(_edge(T.HAS_ENTITY, c["chunk_id"], ids.entity_id(c["domain"], t.norm),
                               c["domain"], float(count)))
        for sent in split_sentences(c["text"]):
            norms = sorted({t.norm for t in extract_terms(sent)} & {t.norm for t in c["_terms"]})
            for a, b in combinations(norms, 2):
                ea, eb = sorted((ids.entity_id(c["domain"], a), ids.entity_id(c["domain"], b)))
                cooc[(c["domain"], ea, eb)] += 1
    for (dom, ea, eb), w in sorted(cooc.items()):
        edges.append(_edge(T.COOCCURS, ea, eb, dom, float(w)))
    erows = []
    for (dom, norm), e in sorted(ent.items()):
        vec = np.mean([cvec[i] for i in sorted(e["chunks"])], axis=0)
        vec = vec / (np.linalg.norm(vec) or 1.0)
        erows.append({
            "entity_id": ids.entity_id(dom, norm), "name": e["name"], "norm": norm, "domain": dom,
            "kind": e["kind"],
            "importance": entity_importance(e["kind"], e["freq"], len(e["chunks"]), n_chunks[dom]),
            "frequency": e["freq"], "chunk_frequency": len(e["chunks"]), "doc_frequency": len(e["docs"]),
            "vector": vec.astype(np.float32).tolist(),
        })

    for c in contents:
        del c["_terms"]
    shards = []
    for dom in sorted({c["domain"] for c in contents}):
        by_sub: dict[int, list] = {}
        for c in contents:         # as the build partitions them: one sub-shard per ACL set
            if c["domain"] == dom:
                by_sub.setdefault(subshard_of(c["source"], 1, c["acl"]), []).append(c)
        shards += [build_shard(index_dir, dom, rows, sub) for sub, rows in sorted(by_sub.items())]
    tables = {
        T.CONTENTS: pa.Table.from_pylist(contents, schema=T.contents_schema(DIM)),
        T.DIRECTORIES: pa.Table.from_pylist(drows, schema=T.directories_schema(DIM)),
        T.ENTITIES: pa.Table.from_pylist(erows, schema=T.entities_schema(DIM)),
        T.EDGES: pa.Table.from_pylist(_dedup_edges(edges), schema=T.edges_schema()),
    }
    infos = []
    for dom in sorted(descriptions):
        dd = [d for d in docs if d.domain == dom]
        infos.append(DomainInfo(
            name=dom, description=descriptions[dom],
            versions=tuple(sorted({d.version for d in dd})),
            collections=tuple(sorted({d.collection for d in dd})),
            n_documents=len(dd), n_chunks=n_chunks[dom]))
    commit_tables(index_dir, tables, shards, embedding_model=emb.model_id, dim=DIM, domains=infos)
    return index_dir


def _edge(kind, src, dst, domain, weight):
    return {"edge_id": ids.edge_id(kind, src, dst), "kind": kind, "src": src, "dst": dst,
            "domain": domain, "weight": weight}


def _dedup_edges(edges):
    out: dict[str, dict] = {}
    for e in edges:
        if e["edge_id"] in out:
            out[e["edge_id"]]["weight"] += e["weight"]
        else:
            out[e["edge_id"]] = dict(e)
    return list(out.values())
