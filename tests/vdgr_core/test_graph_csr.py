"""CSR graph files: the adjacency the graph route builds in memory, written at commit."""
import os

import numpy as np
import pytest

from pipelines.run_build import run_build
from schemas.config import BuildConfig, EmbeddingConfig
from tests.support.corpus import write_corpus
from vdgr_core.query.data import load_index_data
from vdgr_core.query.graph_route import build_domain_graph
from vdgr_core.store.graph_csr import FILES, load_graph
from vdgr_core.store.location import COMPLETE_MARKER
from vdgr_core.store.reader import IndexReader


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("csr")
    corpus = write_corpus(str(root / "corpus"))
    run_build(BuildConfig(corpus=corpus, index=str(root / "index"), embedding=EmbeddingConfig(kind="hashing")))
    return str(root / "index")


def test_graph_files_hold_the_adjacency_the_graph_route_builds(index):
    reader = IndexReader(index)
    data = load_index_data(reader)
    assert set(reader.manifest.graphs) == {"hr", "net", "specs"}
    for domain in reader.manifest.graphs:
        folder = reader.graph_folder(domain)
        assert sorted(f for f in os.listdir(folder) if f != COMPLETE_MARKER) == sorted(FILES)
        cids, eids, csr = load_graph(folder)
        assert list(cids) == sorted(cids) and list(eids) == sorted(eids)
        g = build_domain_graph(data, domain)
        # the same nodes: contents first, then entities (ids map local numbers both ways)
        mem_ids = [data.contents.ids[r].encode() for r in g.content_rows] + [
            data.entities.ids[r].encode() for r in g.entity_rows]
        disk_ids = list(cids) + list(eids)
        assert sorted(mem_ids[:g.nc]) == list(cids) and sorted(mem_ids[g.nc:]) == list(eids)
        order = [disk_ids.index(i) for i in mem_ids]             # memory node -> disk node
        dense_mem = g.adj.toarray()
        dense_disk = csr.toarray()[np.ix_(order, order)]
        np.testing.assert_array_equal(dense_disk, dense_mem)
        assert (dense_disk == dense_disk.T).all() and dense_disk.sum() > 0


def test_graph_files_are_memory_mapped_and_named_by_content(index, tmp_path):
    reader = IndexReader(index)
    cids, _, csr = load_graph(reader.graph_folder("net"))
    assert isinstance(cids, np.memmap) and csr.shape[0] == len(cids) + len(load_graph(reader.graph_folder("net"))[1])
    again = str(tmp_path / "again")
    run_build(BuildConfig(corpus=os.path.join(os.path.dirname(index), "corpus"), index=again,
                          embedding=EmbeddingConfig(kind="hashing")))
    assert IndexReader(again).manifest.graphs == reader.manifest.graphs
