import re

from hypothesis import given, settings, strategies as st

from schemas.config import ChunkingConfig
from schemas.records import DocMeta, DocumentTask, ParsedDocument, Section
from vdgr_core import ids
from vdgr_core.chunking import _split_counted, chunk_document, count_tokens, folder_nodes, split_text


def test_count_tokens():
    assert count_tokens("Reset the X2, then wait.") == 7
    assert count_tokens("") == 0
    assert count_tokens("v2.1 -- ok") == 6


def test_short_text_single_chunk_and_blank():
    assert split_text("  one two three  ", 16, 2) == ["one two three"]
    assert split_text(" \n\n ", 16, 2) == []


def test_prefers_paragraph_boundaries():
    a = " ".join(f"a{i}" for i in range(10))
    b = " ".join(f"b{i}" for i in range(10))
    c = " ".join(f"c{i}" for i in range(10))
    chunks = split_text(f"{a}\n\n{b}\n\n{c}", 20, 0)
    assert chunks == [f"{a}\n\n{b}", c]


def test_sentence_split_inside_long_paragraph():
    s1 = "Alpha " * 9 + "end."
    s2 = "Beta " * 9 + "end."
    chunks = split_text(f"{s1} {s2}", 16, 0)
    assert chunks == [s1.strip(), s2.strip()]


def test_overlap_comes_from_previous_chunk_end():
    words = [f"w{i}" for i in range(60)]
    chunks = split_text(" ".join(words), 20, 3)
    assert chunks[0].split() == words[:20]
    assert chunks[1].split() == words[17:40]


def test_overlong_single_word_is_hard_split():
    word = ".".join(["x"] * 40)       # 79 tokens, no whitespace
    chunks = split_text(word, 16, 0)
    assert "".join(chunks) == word
    assert all(count_tokens(c) <= 16 for c in chunks)


_word = st.one_of(
    st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True),
    st.from_regex(r"[A-Z][a-z]{1,6}\.", fullmatch=True),
    st.from_regex(r"[a-z]{1,5},", fullmatch=True),
)
_sep = st.sampled_from([" ", " ", " ", " ", "\n", "\n\n"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_word, _sep), min_size=1, max_size=900))
def test_property_no_word_lost_order_kept_size_and_overlap(pairs):
    cfg = ChunkingConfig()                     # 200 / 14
    text = "".join(w + s for w, s in pairs)
    words = text.split()
    chunks = split_text(text, cfg.max_tokens, cfg.overlap_tokens)
    assert chunks
    pos = 0                                    # words of the input covered so far
    for i, chunk in enumerate(chunks):
        assert count_tokens(chunk) <= cfg.max_tokens + cfg.overlap_tokens
        cw = chunk.split()
        start = next((s for s in range(pos, max(-1, pos - len(cw)), -1)
                      if words[s:s + len(cw)] == cw), None)
        assert start is not None, "chunk is not a contiguous continuation of the input"
        if i == 0:
            assert start == 0
        else:
            overlap = count_tokens(" ".join(words[start:pos]))
            prev_base = count_tokens(" ".join(words[prev_start:pos]))
            assert overlap <= 0.10 * cfg.max_tokens
            if prev_base - prev_overlap >= cfg.overlap_tokens:
                assert overlap >= 0.05 * cfg.max_tokens
            prev_overlap = overlap
        if i == 0:
            prev_overlap = 0
        prev_start = start
        pos = start + len(cw)
    assert pos == len(words)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_word, _sep), min_size=1, max_size=600))
def test_property_chunk_start_is_its_non_whitespace_offset(pairs):
    text = "".join(w + s for w, s in pairs)
    flat = "".join(text.split())
    for chunk, _, start in _split_counted(text, 40, 5):
        piece = "".join(chunk.split())
        assert flat[start:start + len(piece)] == piece


# ------------------------------------------------------------------------- documents

def _task(folder_metas=None):
    metas = folder_metas or (DocMeta(version="1", acl=("eng",)), DocMeta(version="1", acl=("eng",)),
                             DocMeta(version="2", acl=("ops",)))
    return DocumentTask(corpus_root="/c", rel_path="net/routers/x2/reset.md", domain="net",
                        collection="routers", folder_titles=("Router Guides", "x2"),
                        meta=metas[-1], folder_metas=metas)


def test_folder_nodes():
    nodes = folder_nodes(_task())
    assert [(n.kind, n.level, n.full_path, n.version, n.acl) for n in nodes] == [
        ("domain", 0, ("net",), "1", ("eng",)),
        ("folder", 1, ("net", "Router Guides"), "1", ("eng",)),
        ("folder", 2, ("net", "Router Guides", "x2"), "2", ("ops",)),
    ]
    assert nodes[0].parent_id == "" and nodes[0].collection == ""
    assert nodes[1].parent_id == nodes[0].node_id and nodes[2].parent_id == nodes[1].node_id
    assert nodes[2].node_id == ids.directory_id("net", "2", ("net", "Router Guides", "x2"))
    assert nodes[2].collection == "routers"


def test_chunk_document_nodes_and_chunks():
    parsed = ParsedDocument(
        title="Reset",
        sections=(
            Section("", 0, (), "Preamble text."),
            Section("Steps", 1, ("Steps",), "Hold the button."),
            Section("Empty", 1, ("Empty",), ""),
            Section("Sub", 2, ("Empty", "Sub"), "Hold the button."),   # duplicate text
            Section("Steps", 1, ("Steps",), "Again steps."),            # repeated heading path
        ),
        metadata=(("version", "3"),),
    )
    out = chunk_document(_task(), parsed, ChunkingConfig())
    assert out.title == "Reset" and out.meta.version == "3" and out.meta.acl == ("ops",)
    doc, steps, empty, sub = out.directories
    base = ("net", "Router Guides", "x2", "Reset")
    assert (doc.kind, doc.full_path, doc.level, doc.version) == ("document", base, 3, "3")
    assert doc.parent_id == folder_nodes(_task())[-1].node_id
    assert doc.node_id == ids.directory_id("net", "3", base)
    assert steps.full_path == base + ("Steps",) and steps.parent_id == doc.node_id
    assert sub.parent_id == empty.node_id and sub.level == 5 and sub.kind == "section"
    assert [(c.text, c.title, c.path, c.parent_id, c.position) for c in out.chunks] == [
        ("Preamble text.", "Reset", base, doc.node_id, 0),
        ("Hold the button.", "Steps", base + ("Steps",), steps.node_id, 1),
        ("Again steps.", "Steps", base + ("Steps",), steps.node_id, 2),
    ]
    c = out.chunks[1]
    assert c.chunk_id == ids.chunk_id("net/routers/x2/reset.md", "Hold the button.")
    assert c.doc_id == ids.doc_id("net/routers/x2/reset.md")
    assert (c.domain, c.collection, c.version, c.acl, c.n_tokens) == ("net", "routers", "3", ("ops",), 4)


def test_chunk_document_is_deterministic_and_bad_front_matter_is_typed():
    import pytest
    from schemas.errors import DeadLetterReason, DocumentError

    parsed = ParsedDocument("T", (Section("", 0, (), "x " * 500),))
    a = chunk_document(_task(), parsed, ChunkingConfig(max_tokens=50, overlap_tokens=4))
    b = chunk_document(_task(), parsed, ChunkingConfig(max_tokens=50, overlap_tokens=4))
    assert a == b and len(a.chunks) > 1
    bad = ParsedDocument("T", (Section("", 0, (), "x"),), metadata=(("acl", "bad group"),))
    with pytest.raises(DocumentError) as e:
        chunk_document(_task(), bad, ChunkingConfig())
    assert e.value.reason == DeadLetterReason.PARSE_ERROR


def test_split_text_memo_returns_fresh_lists():
    text = "First paragraph here.\n\nSecond paragraph, a little longer than the first one."
    first = split_text(text, 6, 2)
    first.append("changed")
    assert split_text(text, 6, 2) == first[:-1]
    assert split_text(text, 6, 2) is not split_text(text, 6, 2)


def test_chunk_page_is_the_page_its_text_starts_on():
    body = "\n\n".join(f"p{i} " + "word " * 30 for i in range(6))
    pages = ((0, 4), (len("".join(body.split("\n\np2")[0].split())), 5))   # p2 onwards: page 5
    parsed = ParsedDocument("T", (Section("S", 1, ("S",), body, pages), Section("U", 1, ("U",), "plain")))
    chunks = chunk_document(_task(), parsed, ChunkingConfig(max_tokens=32, overlap_tokens=0)).chunks
    assert [(c.text.split()[0], c.page) for c in chunks] == [
        ("p0", 4), ("p1", 4), ("p2", 5), ("p3", 5), ("p4", 5), ("p5", 5), ("plain", None)]


def test_an_overlap_keeps_the_break_that_stood_before_the_chunk():
    text = "Make it executable:\n\n$ chmod +x myscript.py\n\nOn Windows systems there is no notion of an executable mode."
    chunks = split_text(text, 8, 4)
    assert "myscript.py\n\nOn Windows" in "".join(chunks)
    assert all(" On Windows" not in c for c in chunks)
    assert split_text("one two three four five six seven eight nine ten", 5, 2)[1].startswith("four five six")


def test_the_chunker_rules_are_part_of_the_content_rules():
    from vdgr_core.chunking import CHUNKER_VERSION
    from vdgr_core.safety import content_rules

    assert CHUNKER_VERSION in content_rules().split("/")
