"""Each transform in a real Beam pipeline (TestPipeline + assert_that)."""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from schemas.config import BuildConfig, EmbeddingConfig
from schemas.records import Chunk, DirectoryNode, DocMeta, DocumentTask
from schemas.tables import CONTAINS, COOCCURS, HAS_ENTITY
from transforms.directories import ContainmentEdges, SummarizeDirectories
from transforms.embed import NEW_VECTORS, EmbedRows
from transforms.merge import CooccurrenceEdges, DedupContents, DedupDirectories, MergeEntities
from transforms.parse import DEAD_LETTER, ParseDocuments
from transforms.write import PublishStagedFiles, StageLines, StageParquet, WriteStagedTable
from vdgr_core.ids import chunk_id, entity_id
from vdgr_core.indexing.annotate import annotate_offline

from apache_beam.runners.portability.fn_api_runner import FnApiRunner


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


def _annotated(*chunks):
    return [annotate_offline(c, max_terms=24, summary_sentences=2, summary_max_chars=400) for c in chunks]


def test_parse_documents_splits_good_and_dead(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "good.md").write_text("# Title\n\n## Part\n\nSome body text here.\n")
    (tmp_path / "d" / "empty.md").write_text("")
    tasks = [DocumentTask(str(tmp_path), f"d/{n}", "d", "", (), DocMeta()) for n in ("good.md", "empty.md")]
    with _pipeline() as p:
        out = p | beam.Create(tasks) | ParseDocuments(_cfg(tmp_path))
        assert_that(out.documents | "titles" >> beam.Map(lambda d: (d.task.rel_path, d.title)),
                    equal_to([("d/good.md", "Title")]), label="good")
        assert_that(out[DEAD_LETTER] | "reasons" >> beam.Map(lambda d: (d.rel_path, d.reason)),
                    equal_to([("d/empty.md", "empty")]), label="dead")


def test_dedup_contents_keeps_one_per_content_and_source():
    a = _chunk("Same text.", position=3)
    b = _chunk("Same text.", position=1)          # same content, same source: merged
    c = _chunk("Same text.", source="d/b.md")     # same content, other source: kept apart
    with _pipeline() as p:
        out = (p | beam.Create(_annotated(a, b, c)) | DedupContents()
               | beam.Map(lambda x: (x.chunk.source, x.chunk.position)))
        assert_that(out, equal_to([("d/a.md", 1), ("d/b.md", 3 - 3)]))


def test_dedup_directories_merges_same_path_and_version():
    def node(version, source):
        from vdgr_core.ids import directory_id
        fp = ("d", "Folder")
        return DirectoryNode(directory_id("d", version, fp), fp, "root", "d", "Folder", version,
                             "Folder", 1, "folder", (), source)
    nodes = [node("1", "x"), node("1", "y"), node("2", "x")]
    with _pipeline() as p:
        out = p | beam.Create(nodes) | DedupDirectories() | beam.Map(lambda n: n.version)
        assert_that(out, equal_to(["1", "2"]))


def test_merge_entities_sums_across_documents():
    text = "The DL_MIMO_Mode flag is set. Check DL_MIMO_Mode with SKU-90214-B."
    chunks = [_chunk(text, source=f"d/{i}.md") for i in range(3)]
    eid = entity_id("d", "dl mimo mode")
    with _pipeline() as p:
        entities, existence = p | beam.Create(_annotated(*chunks)) | MergeEntities()
        assert_that(entities | beam.Filter(lambda r: r["entity_id"] == eid)
                    | beam.Map(lambda r: (r["frequency"], r["chunk_frequency"], r["doc_frequency"])),
                    equal_to([(6, 3, 3)]), label="entity")
        assert_that(existence | beam.Filter(lambda e: e["dst"] == eid)
                    | beam.Map(lambda e: (e["kind"], e["weight"])),
                    equal_to([(HAS_ENTITY, 2.0)] * 3), label="existence")


def test_cooccurrence_weight_is_sentences_with_both():
    text = "DL_MIMO_Mode needs SKU-90214-B. Then DL_MIMO_Mode and SKU-90214-B reboot. Only SKU-90214-B here."
    chunks = [_chunk(text, source="d/1.md"), _chunk(text, source="d/2.md")]
    with _pipeline() as p:
        edges = p | beam.Create(_annotated(*chunks)) | CooccurrenceEdges()
        pair = sorted((entity_id("d", "dl mimo mode"), entity_id("d", "sku 90214 b")))
        assert_that(edges | beam.Filter(lambda e: [e["src"], e["dst"]] == pair)
                    | beam.Map(lambda e: (e["kind"], e["weight"])), equal_to([(COOCCURS, 4.0)]))


def test_summaries_are_bottom_up_and_containment_edges(tmp_path):
    root = DirectoryNode("root", ("d",), "", "d", "", "", "d", 0, "domain", ())
    sec = DirectoryNode("sec", ("d", "Reset"), "root", "d", "", "", "Reset", 1, "section", ())
    chunk = _chunk("Hold the reset button for ten seconds to restore factory settings.", parent="sec")
    with _pipeline() as p:
        nodes = p | "nodes" >> beam.Create([root, sec])
        contents = p | "contents" >> beam.Create(_annotated(chunk))
        summarized = (nodes, contents) | SummarizeDirectories(_cfg(tmp_path))
        assert_that(summarized | beam.Map(lambda n: (n.node_id, "reset button" in n.summary)),
                    equal_to([("root", True), ("sec", True)]), label="summaries")
        edges = (nodes, contents) | ContainmentEdges()
        assert_that(edges | beam.Map(lambda e: (e["kind"], e["src"], e["dst"])),
                    equal_to([(CONTAINS, "root", "sec"), (CONTAINS, "sec", chunk.chunk_id)]), label="edges")


def _row_a(item, vector):
    return {"item": item, "table": "a", "vector": [round(float(x), 6) for x in vector]}


def _row_b(item, vector):
    return {"item": item, "table": "b", "vector": [round(float(x), 6) for x in vector]}


def test_embed_rows_embeds_each_text_once_and_makes_every_row(tmp_path):
    from vdgr_core.embedding import make_embedder

    cfg = _cfg(tmp_path)
    embed = make_embedder(cfg.embedding).embed
    vec = {t: [round(float(x), 6) for x in embed([t])[0]] for t in ("alpha beta", "gamma")}
    items = [("k1", ("alpha beta", "a", "x")), ("k1", ("alpha beta", "b", "y")),
             ("k1", ("alpha beta", "a", "w")), ("k2", ("gamma", "a", "z"))]
    with _pipeline() as p:
        out = p | beam.Create(items) | EmbedRows(cfg, {"a": _row_a, "b": _row_b})
        assert_that(out["a"] | "a" >> beam.Map(lambda r: (r["item"], r["vector"] == vec[
            "gamma" if r["item"] == "z" else "alpha beta"])),
            equal_to([("x", True), ("w", True), ("z", True)]), label="rows a")
        assert_that(out["b"] | "b" >> beam.Map(lambda r: (r["item"], r["table"])),
                    equal_to([("y", "b")]), label="rows b")
        assert_that(out[NEW_VECTORS] | beam.Map(lambda r: r["key"]), equal_to(["k1", "k2"]), label="new")


def test_staged_files_are_published_under_their_prefixes(tmp_path):
    import pyarrow as pa

    from pipelines.staging import Staging

    staging = Staging.new(str(tmp_path / "index"), "run")
    schema = pa.schema([("id", pa.string()), ("n", pa.int32())])
    rows = [{"id": f"r{i}", "n": i} for i in range(25)]
    lines = ['{"domain": "d", "folder": "f", "n_docs": 1, "digest": "x"}']
    with _pipeline() as p:
        staged = [p | "rows" >> beam.Create(rows) | "t" >> StageParquet(staging.prefix("t"), schema),
                  p | "empty" >> beam.Create([]) | "e" >> StageParquet(staging.prefix("e"), schema),
                  p | "lines" >> beam.Create(lines) | StageLines(staging.prefix("shards"))]
        _ = staged | beam.Flatten() | PublishStagedFiles()
        _ = p | "alone" >> beam.Create(rows[:3]) | WriteStagedTable(staging.prefix("u"), schema)
    assert sorted(staging.read_table("t", schema).to_pylist(), key=lambda r: r["n"]) == rows
    assert staging.read_table("e", schema).num_rows == 0
    assert sorted(r["id"] for r in staging.read_table("u", schema).to_pylist()) == ["r0", "r1", "r2"]
    assert [s.domain for s in staging.read_shards()] == ["d"]
    names = sorted(f.name for f in (tmp_path / "index" / "_staging" / "run").rglob("*") if f.is_file())
    assert not [n for n in names if n.startswith(".tmp")]
    assert all(n.startswith("part-") and "-of-" in n for n in names)


if __name__ == "__main__":
    pytest.main([__file__])
