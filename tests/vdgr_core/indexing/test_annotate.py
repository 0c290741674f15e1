"""Tests for the per-chunk offline annotation (vdgr_core.indexing.annotate)."""
from schemas.records import Chunk
from vdgr_core.ids import chunk_id
from vdgr_core.indexing import annotate as A

TEXT = ("Turn on NFC before pairing the Galaxy Buds. NFC and Bluetooth must both be on. "
        "Then open SmartThings and tap the Galaxy Buds card.")


def _chunk(source: str, text: str = TEXT, title: str = "Pairing") -> Chunk:
    return Chunk(chunk_id=chunk_id(source, text), doc_id="doc-" + source, text=text, source=source,
                 title=title, path=("d", title), parent_id="p-" + source, domain="d", collection="",
                 version="", acl=(), position=0, n_tokens=len(text.split()))


def _annotate(chunk: Chunk) -> A.AnnotatedChunk:
    return A.annotate_offline(chunk, max_terms=24, summary_sentences=2, summary_max_chars=400)


def test_equal_texts_share_the_text_level_work_but_keep_their_ids():
    A._offline_text_annotation.cache_clear()
    A._text_statistics.cache_clear()
    first, second = _annotate(_chunk("d/a.md")), _annotate(_chunk("d/b.md"))
    assert A._offline_text_annotation.cache_info().hits == 1
    assert (first.chunk.summary, first.chunk.entities, first.pairs) == \
        (second.chunk.summary, second.chunk.entities, second.pairs)
    assert {m.chunk_id for m in first.mentions} == {first.chunk.chunk_id}
    assert {m.chunk_id for m in second.mentions} == {second.chunk.chunk_id}
    assert {m.doc_id for m in second.mentions} == {"doc-d/b.md"}
    assert first.chunk.source == "d/a.md" and second.chunk.source == "d/b.md"


def test_memoized_annotation_equals_a_fresh_one():
    chunk = _chunk("d/a.md")
    cached = _annotate(chunk)
    A._offline_text_annotation.cache_clear()
    A._text_statistics.cache_clear()
    assert _annotate(chunk) == cached
    assert "nfc" in cached.chunk.entities
    assert any(a == "bluetooth" or b == "bluetooth" for a, b, _ in cached.pairs)


def test_the_title_is_part_of_the_key():
    a = _annotate(_chunk("d/a.md", title="Pairing"))
    b = _annotate(_chunk("d/a.md", title="Galaxy Buds"))
    assert a.chunk.title != b.chunk.title
    assert a.chunk.summary == A.extractive_summary(TEXT, "Pairing", 2, 400)
    assert b.chunk.summary == A.extractive_summary(TEXT, "Galaxy Buds", 2, 400)


def test_title_entities_come_first_and_only_when_asked():
    chunk = _chunk("d/a.md", title="Waylon Payne")
    with_titles = A.annotate_offline(chunk, max_terms=24, summary_sentences=2, summary_max_chars=400)
    without = A.annotate_offline(chunk, max_terms=24, summary_sentences=2, summary_max_chars=400,
                                 title_entities=False)
    assert "waylon payne" in with_titles.chunk.entities
    assert "waylon payne" not in without.chunk.entities
    assert set(without.chunk.entities) < set(with_titles.chunk.entities)
    mention = next(m for m in with_titles.mentions if m.norm == "waylon payne")
    assert (mention.kind, mention.mentions) == ("title", 1)      # the text never names it
    # the cap counts the title's terms first
    capped = A.annotate_offline(chunk, max_terms=2, summary_sentences=2, summary_max_chars=400)
    assert "waylon payne" in capped.chunk.entities and len(capped.chunk.entities) == 2


def test_only_the_chunk_opening_a_section_gets_its_title():
    from dataclasses import replace

    a1 = _chunk("d/a.md", text="First part of pairing.")
    a2 = replace(_chunk("d/a.md", text="Second part of pairing."), position=1)
    b1 = replace(_chunk("d/a.md", text="Other section.", title="Reset"), parent_id="p-other", position=2)
    assert A.section_heads([a1, a2, b1]) == frozenset({a1.chunk_id, b1.chunk_id})
    assert A.section_heads([]) == frozenset()
