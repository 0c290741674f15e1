"""Each transform in a real Beam pipeline (TestPipeline + assert_that)."""
from __future__ import annotations

import pickle
import zlib

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas.config import BuildConfig, EmbeddingConfig
from schemas.records import Chunk, DirectoryNode, DocMeta, DocumentTask
from vdgr_core.indexing.per_document import DocumentTree, pack_tree, unpack_tree
from schemas.tables import COOCCURS
from tests.support.tree_summary import summarize_tree
from transforms.directories import SummarizeDirectoriesByLevel
from transforms.documents import SKIPPED, ReadTasks
from transforms.embed import NEW_VECTORS, EmbedInBatches
from transforms.merge import ENTITY_STATS, CooccurrenceEdges, MergeEntities
from transforms.parse import DEAD_LETTER, ParseDocuments
from transforms.write import CountRows, PublishStaged, StageRows
from vdgr_core.corpus import CorpusScan
from vdgr_core.ids import chunk_id, entity_id
from vdgr_core.indexing.annotate import annotate_offline
from vdgr_core.indexing.document import IndexedDocument
from vdgr_core.indexing.entity_merge import fixed_point
from vdgr_core.indexing.per_document import AnnotatedDocument
from vdgr_core.store import digest as dg


def _pipeline() -> TestPipeline:
    """Beam's TestPipeline on FnApiRunner (its default is the legacy bundle-based runner)."""
    return TestPipeline(runner=FnApiRunner())


def _cfg(tmp_path):
    return BuildConfig(corpus=str(tmp_path), index=str(tmp_path / "index"),
                       embedding=EmbeddingConfig(kind="hashing", batch_size=4))


def _chunk(text, source="d/a.md", position=0, domain="d", parent="p", acl=()):
    return Chunk(chunk_id=chunk_id(source, text), doc_id="doc-" + source, text=text, source=source,
                 title="T", path=(domain, "A", "T"), parent_id=parent, domain=domain, collection="",
                 version="", acl=tuple(acl), position=position, n_tokens=len(text.split()))


def _annotated_doc(*chunks):
    ann = tuple(annotate_offline(c, max_terms=24, summary_sentences=2, summary_max_chars=400) for c in chunks)
    task = DocumentTask("/c", chunks[0].source, chunks[0].domain, "", (), DocMeta())
    doc = IndexedDocument(task, chunks[0].doc_id, "T", DocMeta(), "h", (), tuple(chunks))
    return AnnotatedDocument(doc, ann)


def test_parse_documents_splits_good_and_dead(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "good.md").write_text("# Title\n\n## Part\n\nSome body text here.\n")
    (tmp_path / "d" / "empty.md").write_text("")
    tasks = [DocumentTask(str(tmp_path), f"d/{n}", "d", "", (), DocMeta()) for n in ("good.md", "empty.md")]
    with _pipeline() as p:
        out = p | beam.Create(tasks) | ParseDocuments(_cfg(tmp_path).slices.parse)
        assert_that(out.documents | "titles" >> beam.Map(lambda d: (d.task.rel_path, d.title)),
                    equal_to([("d/good.md", "Title")]), label="good")
        assert_that(out[DEAD_LETTER] | "reasons" >> beam.MapTuple(lambda d, t: (d.rel_path, d.reason, t.rel_path)),
                    equal_to([("d/empty.md", "empty", "d/empty.md")]), label="dead")


def test_tasks_come_from_the_task_manifest_files(tmp_path):
    from pipelines.staging import Staging
    from schemas.records import DeadLetter

    tasks = tuple(DocumentTask(str(tmp_path), f"d/{i:04d}.md", "d", "", ("F",), DocMeta(version="1"),
                               (DocMeta(), DocMeta(version="1"))) for i in range(2500))
    staging = Staging.new(str(tmp_path / "index"), "run")
    pattern = staging.write_tasks(CorpusScan(tasks, ()), [DeadLetter("d/x.png", "d", "unsupported_format", "no")])
    assert len(list((tmp_path / "index" / "_staging" / "run" / "tasks").iterdir())) == 3   # 1,000 per file
    with _pipeline() as p:
        read = p | ReadTasks(pattern)
        assert_that(read.tasks, equal_to(list(tasks)), label="tasks")
        assert_that(read[SKIPPED] | beam.Map(lambda d: d.rel_path), equal_to(["d/x.png"]), label="skipped")


def _old_entity_vectors(rows, entity_ids):
    """The previous result: normalized mean (float64 sums in sorted order) of the vectors of the
    chunks with a has_entity edge to the entity."""
    out = {}
    for eid in entity_ids:
        vecs = [np.asarray(r["vector"], np.float64) for r in sorted(rows, key=lambda r: r["chunk_id"])
                if eid in {entity_id(r["domain"], t["norm"]) for t in r["terms"]}]
        s = np.sum(vecs, axis=0)
        out[eid] = (s / np.linalg.norm(s)).astype(np.float32)
    return out


def test_merge_entities_sums_across_documents_and_equals_the_old_vectors():
    from vdgr_core.embedding import make_embedder
    from vdgr_core.indexing.rows import annotated_row

    text = "The DL_MIMO_Mode flag is set. Check DL_MIMO_Mode with SKU-90214-B."
    docs = [_annotated_doc(_chunk(text, source=f"d/{i}.md"), _chunk(f"Chunk {i} of DL_MIMO_Mode.", source=f"d/{i}.md",
                                                                     position=1)) for i in range(3)]
    emb = make_embedder(EmbeddingConfig(kind="hashing", dim=16))
    rows = [annotated_row(a, emb.embed([a.chunk.text])[0]) for d in docs for a in d.chunks]
    eid = entity_id("d", "dl mimo mode")
    expected = _old_entity_vectors(rows, [eid])[eid]
    with _pipeline() as p:
        merged = (p | "docs" >> beam.Create(docs), p | "rows" >> beam.Create(rows)) | MergeEntities(16)
        mine = merged.entities | beam.Filter(lambda r: r["entity_id"] == eid)
        assert_that(mine | "counts" >> beam.Map(lambda r: (r["frequency"], r["chunk_frequency"], r["doc_frequency"])),
                    equal_to([(9, 6, 3)]), label="entity")
        assert_that(mine | "vector" >> beam.Map(lambda r: bool(np.allclose(r["vector"], expected, atol=1e-7))),
                    equal_to([True]), label="vector")
        sums = merged[ENTITY_STATS] | beam.Filter(lambda r: r["entity_id"] == eid)
        want = sum(fixed_point(r["vector"]) for r in rows if "dl mimo mode" in r["entities"])
        assert_that(sums | beam.Map(lambda r: bool((np.asarray(r["vector_sum"]) == want).all())),
                    equal_to([True]), label="exact sum")


def test_entity_vectors_do_not_depend_on_how_the_work_is_split():
    """Fixed-point sums are exact: any grouping of the chunks gives bit-identical vectors."""
    from vdgr_core.indexing.entity_merge import EntityStats, unit_vector

    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(50, 32)).astype(np.float32)
    whole = EntityStats()
    for v in vecs:
        whole.add_vector(fixed_point(v))
    parts = [EntityStats(), EntityStats(), EntityStats()]
    for i in rng.permutation(50):
        parts[i % 3].add_vector(fixed_point(vecs[i]))
    merged = parts[2].merge(parts[0]).merge(parts[1])
    np.testing.assert_array_equal(unit_vector(merged.vector_sum, 32), unit_vector(whole.vector_sum, 32))


def test_cooccurrence_weight_is_sentences_with_both():
    text = "DL_MIMO_Mode needs SKU-90214-B. Then DL_MIMO_Mode and SKU-90214-B reboot. Only SKU-90214-B here."
    docs = [_annotated_doc(_chunk(text, source="d/1.md")), _annotated_doc(_chunk(text, source="d/2.md"))]
    with _pipeline() as p:
        edges = p | beam.Create(docs) | CooccurrenceEdges()
        pair = sorted((entity_id("d", "dl mimo mode"), entity_id("d", "sku 90214 b")))
        assert_that(edges | beam.Filter(lambda e: [e["src"], e["dst"]] == pair)
                    | beam.Map(lambda e: (e["kind"], e["weight"])), equal_to([(COOCCURS, 4.0)]))


def _node(node_id, path, parent, kind, level, source="", version=""):
    return DirectoryNode(node_id, tuple(path), parent, "d", "", version, path[-1], level, kind, (), source)


def test_level_by_level_summaries_equal_one_pass_over_the_domain(tmp_path):
    """Documents grouped by document node (two documents with one title merge), then folders
    level by level, give the summaries summarize_tree gives over the whole domain; a document
    titled like the folder beside it is merged into that folder."""
    from vdgr_core.indexing.per_document import DocumentTree

    root = _node("root", ["d"], "", "domain", 0)
    fold = _node("F", ["d", "Guide"], "root", "folder", 1)
    sub = _node("S", ["d", "Guide", "Sub"], "F", "folder", 2)
    doc_a = _node("DA", ["d", "Guide", "Reset"], "F", "document", 2, "d/Guide/a.md")
    sec_a = _node("SA", ["d", "Guide", "Reset", "Hold"], "DA", "section", 3, "d/Guide/a.md")
    doc_b = _node("DA", ["d", "Guide", "Reset"], "F", "document", 2, "d/Guide/b.md")   # same title
    doc_c = _node("S", ["d", "Guide", "Sub"], "F", "document", 2, "d/Guide/sub.md")    # titled like folder S
    doc_d = _node("DD", ["d", "Guide", "Sub", "Ports"], "S", "document", 3, "d/Guide/Sub/d.md")
    chunks = {
        "d/Guide/a.md": [("SA", 0, "Hold the reset button for ten seconds.", ()),
                         ("DA", 1, "The reset restores factory settings.", ())],
        "d/Guide/b.md": [("DA", 0, "Resetting erases every saved network.", ())],
        "d/Guide/sub.md": [("S", 0, "The sub guide covers ports and cables.", ())],
        "d/Guide/Sub/d.md": [("DD", 0, "Port four carries the uplink.", ())],
    }
    trees = [("DA", DocumentTree((doc_a, sec_a), tuple(chunks["d/Guide/a.md"]))),
             ("DA", DocumentTree((doc_b,), tuple(chunks["d/Guide/b.md"]))),
             ("S", DocumentTree((doc_c,), tuple(chunks["d/Guide/sub.md"]))),
             ("DD", DocumentTree((doc_d,), tuple(chunks["d/Guide/Sub/d.md"])))]
    folders = [root, fold, sub, root, fold]
    from vdgr_core.indexing.tree_summary import merge_directory_nodes

    by_id = {}
    for n in [root, fold, sub, doc_a, sec_a, doc_b, doc_c, doc_d]:
        by_id.setdefault(n.node_id, []).append(n)
    merged = [merge_directory_nodes(ns) for ns in by_id.values()]
    expected = {n.node_id: (n.summary, n.sources) for n in summarize_tree(
        merged, [c for cs in chunks.values() for c in cs], max_chars=600)}
    with _pipeline() as p:
        out = ((p | "trees" >> beam.Create(trees), p | "folders" >> beam.Create(folders))
               | SummarizeDirectoriesByLevel(_cfg(tmp_path).slices.summaries, max_folder_level=2)
               | beam.Flatten())
        assert_that(out | beam.Map(lambda n: (n.node_id, (n.summary, n.sources))),
                    equal_to(sorted(expected.items())))


def _row(item, vector):
    return {"item": item, "vector": [round(float(x), 6) for x in vector]}


def test_embed_in_batches_embeds_each_text_once_and_makes_every_row(tmp_path):
    from vdgr_core.embedding import make_embedder

    cfg = _cfg(tmp_path)
    embed = make_embedder(cfg.embedding).embed
    vec = {t: [round(float(x), 6) for x in embed([t])[0]] for t in ("alpha beta", "gamma")}
    items = [("k1", "alpha beta", "x"), ("k1", "alpha beta", "y"), ("k2", "gamma", "z")]
    with _pipeline() as p:
        out = p | beam.Create(items) | EmbedInBatches(cfg.slices.embed, _row, buffer_size=2)
        assert_that(out.rows | "rows" >> beam.Map(lambda r: (r["item"], r["vector"] == vec[
            "gamma" if r["item"] == "z" else "alpha beta"])),
            equal_to([("x", True), ("y", True), ("z", True)]), label="rows")
        assert_that(out[NEW_VECTORS] | beam.Map(lambda r: r["key"]), equal_to(["k1", "k2"]), label="new")


def _staged_file(path: str) -> pa.Table:
    """The rows of one staged file."""
    from transforms.write import decode_rows

    with open(path, "rb") as f:
        return decode_rows(f.read())


def test_staged_rows_are_bounded_files_listed_with_their_digests(tmp_path):
    from pipelines.staging import Staging

    staging = Staging.new(str(tmp_path / "index"), "run")
    schema = pa.schema([("id", pa.string()), ("domain", pa.string()), ("n", pa.int32())])
    rows = [{"id": f"r{i}", "domain": "ab"[i % 2], "n": i} for i in range(25)]
    with _pipeline() as p:
        staged = [p | "rows" >> beam.Create(rows) | "t" >> StageRows("t", staging.prefix("t"), schema, max_rows=4,
                                                                    partition=lambda r: (r["domain"],)),
                  p | "empty" >> beam.Create([]) | "e" >> StageRows("e", staging.prefix("e"), schema)]
        _ = staged | beam.Flatten() | PublishStaged(staging.root)
    listed = staging.staged()
    assert sorted(staging.read_table("t", schema).to_pylist(), key=lambda r: r["n"]) == rows
    assert listed.rows == {"t": 25} and staging.read_table("e", schema).num_rows == 0
    assert all(_staged_file(f).num_rows <= 4 for f in listed.files["t"])
    whole = pa.Table.from_pylist(rows, schema=schema)
    assert listed.digests["t"] == dg.domain_digests(whole)     # sums of per-file digests
    names = sorted(f.name for f in (tmp_path / "index" / "_staging" / "run" / "t").iterdir())
    assert not [n for n in names if n.startswith(".tmp")]
    assert all(n.startswith("part-") and "-of-" in n for n in names)


def _publish_counted(tmp_path, rows: list, counted: list):
    """Stage ``rows`` as table t and publish beside a count of ``counted`` taken for t."""
    from pipelines.staging import Staging

    staging = Staging.new(str(tmp_path / "index"), "run")
    schema = pa.schema([("id", pa.string()), ("domain", pa.string())])
    with _pipeline() as p:
        staged = p | "rows" >> beam.Create(rows) | StageRows("t", staging.prefix("t"), schema, max_rows=3)
        count = CountRows.of({"t": [p | "counted" >> beam.Create(counted)]})
        _ = (staged, count) | beam.Flatten() | PublishStaged(staging.root)
    return staging


def test_a_table_whose_writers_wrote_every_counted_row_is_published(tmp_path):
    rows = [{"id": f"r{i}", "domain": "a"} for i in range(7)]
    staging = _publish_counted(tmp_path, rows, rows)
    assert staging.staged().rows == {"t": 7}
    assert not [r for r in staging.staged().records if r.get("kind") == "expected"]


def test_rows_lost_between_the_count_and_the_writers_fail_the_publish(tmp_path):
    from schemas.errors import RowsLostError

    rows = [{"id": f"r{i}", "domain": "a"} for i in range(7)]
    with pytest.raises(Exception, match=r"t: 6 written of 7") as err:
        _publish_counted(tmp_path, rows[:6], rows)        # a runner dropped one row before the writer
    assert RowsLostError.__name__ in repr(err.value) or isinstance(err.value, RowsLostError)
    assert not (tmp_path / "index" / "_staging" / "run" / "staged.json").exists()


if __name__ == "__main__":
    pytest.main([__file__])


def test_a_packed_document_tree_reads_back_equal_and_is_smaller():
    nodes = tuple(DirectoryNode(node_id=f"{i:032x}", full_path=("manual", "Galaxy", f"Section {i}"),
                                parent_id=f"{i // 4:032x}", domain="manual", collection="", version="",
                                title=f"Section {i}", level=3, kind="section", acl=("staff",), source="manual/a.md")
                  for i in range(40))
    chunks = tuple((f"{i % 40:032x}", i, f"How to set up feature {i} of the phone in settings.", ("staff",))
                   for i in range(200))
    tree = DocumentTree(nodes, chunks)
    packed = pack_tree(tree)
    assert unpack_tree(packed) == tree
    assert len(packed) < len(pickle.dumps(tree)) / 3
    with pytest.raises(TypeError):
        unpack_tree(zlib.compress(pickle.dumps({"not": "a tree"})))


@pytest.mark.parametrize("vector", [None, np.array([3, -2, 1 << 40], dtype=np.int64)])
def test_entity_stats_coder_round_trips_every_field(vector):
    from collections import Counter

    from transforms.merge import EntityStatsCoder
    from vdgr_core.indexing.entity_merge import EntityStats

    stats = EntityStats(names=Counter({"Wi-Fi": 3, "wifi": 1}), kinds=Counter({"term": 2}), frequency=4,
                        chunks=2, docs=1, best_score=0.75, vector_sum=vector, best_score_stale=True)
    back = EntityStatsCoder().decode(EntityStatsCoder().encode(stats))
    assert (back.names, back.kinds, back.frequency, back.chunks, back.docs, back.best_score,
            back.best_score_stale) == (stats.names, stats.kinds, 4, 2, 1, 0.75, True)
    assert list(back.names) == ["Wi-Fi", "wifi"]          # order kept: ties resolve the same way
    if vector is None:
        assert back.vector_sum is None
    else:
        np.testing.assert_array_equal(back.vector_sum, vector)
        back.add_vector(np.ones(3, dtype=np.int64))       # decoded sums stay writable
