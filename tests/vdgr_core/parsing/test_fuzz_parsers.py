"""Fuzzing (hypothesis): every parser, the front-matter reader and the ``_meta.yaml`` reader.

Any input ends as a parsed result or a typed error (a ``DocumentError`` carrying the
dead-letter reason, or a ``ConfigError`` for ``_meta.yaml``), never another exception or a
hang; and ``load_document``, the per-file step of a build, turns any bytes into an indexed
document or a dead letter. Inputs mix arbitrary text and bytes with the lines each format
gives meaning to. Budget: ``VDGR_FUZZ_EXAMPLES`` (tests/support/fuzz.py; ``make fuzz``).
"""
from __future__ import annotations

import io

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from schemas.config import BuildConfig, ChunkingConfig, LimitsConfig
from schemas.errors import ConfigError, DeadLetterReason, DocumentError
from schemas.records import DeadLetter, DocMeta, DocumentTask, ParsedDocument
from tests.support.fuzz import FUZZ, lines_of, watchdog
from vdgr_core.indexing.document import IndexedDocument, load_document
from vdgr_core.metadata import load_meta_yaml
from vdgr_core.parsing import parse_document
from vdgr_core.parsing.decode import decode_document
from vdgr_core.parsing.markdown import split_front_matter

FRAGMENTS = {
    "markdown": ["---", "...", "# Title", "## Section", "###### deep", "#", "Setext", "===", "---", "***",
                 "```", "~~~", "```python", "> quote", "- [x] item", "* item", "| a | b |", "|---|:-:|",
                 "[ref]: http://x", "<!-- comment", "-->", "**bold** _em_ `code`", "[link](url)",
                 "title: T", "acl: [hr]", "acl: {a: b}", "version: 2020-01-01", "    indented"],
    "html": ["<html>", "<head><title>T</title></head>", "<body>", "<h1>A</h1>", "<h2>", "</h2>", "<h7>x</h7>",
             "<p>para", "<pre>code</pre>", "<nav>menu</nav>", "<main>", "<article>", "<script>x</script>",
             "<style>", "<br>", "<table><tr><td>c</td></tr></table>", "<!--", "-->", "&amp;", "&#0;",
             "<![CDATA[", "]]>", "<div", "</div>", "<li>item", "<meta charset='x'>"],
    "rst": ["Title", "=====", "-----", "~~~~~", "=", "Sub", "^^^^", ".. note::", ".. code-block:: python",
            "::", "   indented", ":field: value", "**b** *e* ``lit`` `ref`_", ".. _label:",
            "=====", "Overline", "=====", "* bullet", "#. enum", "|sub|"],
    "text": ["1. Introduction", "1.1 Scope", "2) Setup", "CHAPTER ONE", "", "   ", "\t", "a" * 200,
             "- item", "A.", "12.3.4.5 Deep", "\x0c"],
}
FORMATS = sorted(FRAGMENTS)
EXTENSION = {"markdown": "md", "html": "html", "rst": "rst", "text": "txt"}
CONFIG = BuildConfig(corpus="/unused", index="/unused", chunking=ChunkingConfig(max_tokens=32, overlap_tokens=4),
                     limits=LimitsConfig(max_file_bytes=4096, max_sections_per_doc=50))
REASONS = set(DeadLetterReason)


def _task(fmt: str) -> DocumentTask:
    return DocumentTask(corpus_root="/corpus", rel_path=f"dom/sub/doc.{EXTENSION[fmt]}", domain="dom",
                        collection="sub", folder_titles=("sub",), meta=DocMeta(version="1"))


def _text_for(fmt: str):
    return st.one_of(lines_of(FRAGMENTS[fmt]), st.text(max_size=300))


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(data=st.data())
def test_parser_returns_a_document_or_a_typed_error(fmt, data):
    text = data.draw(_text_for(fmt), label="text")
    with watchdog():
        try:
            doc = parse_document(text, fmt, "fallback")
        except DocumentError as e:
            assert e.reason in REASONS
            return
    assert isinstance(doc, ParsedDocument)
    assert any(s.text.strip() for s in doc.sections)


@FUZZ
@given(raw=st.binary(max_size=5000))
@example(raw=b"")
@example(raw=b"\xff\xfe" + "titre é".encode("utf-16-le"))
@example(raw=b"x" * 4097)
@example(raw=b"\x00" * 64)
def test_decoder_returns_text_or_a_typed_error(raw):
    with watchdog():
        try:
            text = decode_document(raw, CONFIG.limits.max_file_bytes)
        except DocumentError as e:
            assert e.reason in REASONS
            return
    assert isinstance(text, str)


def _open_bytes(raw: bytes):
    return lambda path: io.BytesIO(raw)


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(data=st.data())
def test_load_document_gives_a_document_or_a_dead_letter(fmt, data):
    """The build's per-file step, from bytes: structured text in several encodings, or noise."""
    text = data.draw(_text_for(fmt), label="text")
    raw = data.draw(st.one_of(st.sampled_from(["utf-8", "utf-16", "latin-1"]).map(
        lambda enc: text.encode(enc, errors="replace")), st.binary(max_size=600)), label="bytes")
    with watchdog():
        out = load_document(_task(fmt), CONFIG.slices.parse, _open_bytes(raw), lambda *parts: "/".join(parts))
    assert isinstance(out, (IndexedDocument, DeadLetter))
    if isinstance(out, DeadLetter):
        assert DeadLetterReason(out.reason) in REASONS and out.detail
    else:
        assert out.chunks and all(c.text.strip() for c in out.chunks)


YAML_FRAGMENTS = ["version: 1", "version: 2020-01-01", "version: [1, 2]", "acl: hr", "acl: [hr, 'bad group']",
                  "acl: [true]", "acl: {a: 1}", "acl: 12", "title: T", "title: {x: 1}", "label: yes",
                  "? [a, b]\n: c", "&a [*a]", "a: &x 1\nb: *x", "!!python/object:os.system", "- item",
                  "key: |\n  block", "{", "[", "'unclosed", "\t: tab", "%YAML 1.1", "---", "...",
                  "x: !!binary aGk=", "x: .nan", "x: 1e999", "<<: {version: 9}"]


@FUZZ
@given(text=st.one_of(lines_of(YAML_FRAGMENTS), st.text(max_size=200)))
@example(text="[" * 5000)
@example(text="a: " + "[" * 5000 + "]" * 5000)
@example(text="acl: [" + ", ".join(f"g{i}" for i in range(2000)) + "]")
def test_meta_yaml_reader_returns_meta_or_a_config_error(text):
    with watchdog():
        try:
            meta = load_meta_yaml(text)
        except ConfigError as e:
            assert str(e)
            return
    assert isinstance(meta, DocMeta)
    assert all(isinstance(g, str) for g in meta.acl)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.labels)


@FUZZ
@given(front=st.one_of(lines_of(YAML_FRAGMENTS), st.text(max_size=200)), body=st.text(max_size=100),
       close=st.sampled_from(["---", "...", "", "--- "]))
@example(front="[" * 5000, body="text", close="---")
def test_front_matter_reader_returns_a_mapping_or_a_typed_error(front, body, close):
    with watchdog():
        try:
            data, rest = split_front_matter(f"---\n{front}\n{close}\n{body}")
        except DocumentError as e:
            assert e.reason in (DeadLetterReason.TRUNCATED, DeadLetterReason.PARSE_ERROR)
            return
    assert isinstance(data, dict) and isinstance(rest, str)


def _binary_task(ext: str) -> DocumentTask:
    return DocumentTask(corpus_root="/corpus", rel_path=f"dom/sub/doc.{ext}", domain="dom",
                        collection="sub", folder_titles=("sub",), meta=DocMeta(version="1"))


_SEEDS: dict[str, list[bytes]] = {}


def _seeds(ext: str) -> list[bytes]:
    """Valid documents of the format, made by the test generators (fpdf2, python-docx)."""
    if ext not in _SEEDS:
        from tests.support import documents as gen

        _SEEDS[ext] = ([gen.pdf_with_outline(), gen.pdf_by_fonts(), gen.pdf_encrypted(), gen.pdf_image_only()]
                       if ext == "pdf" else [gen.docx_manual(), gen.docx_document([("Heading 1", "A"), ("Normal", "b")], [["x", "y"]])])
    return _SEEDS[ext]


def _mutated(raw: bytes, data) -> bytes:
    """One of: truncated, a byte range overwritten, bytes inserted, or the seed itself."""
    kind = data.draw(st.sampled_from(["truncate", "overwrite", "insert", "same"]), label="mutation")
    if kind == "same" or not raw:
        return raw
    at = data.draw(st.integers(0, len(raw) - 1), label="at")
    if kind == "truncate":
        return raw[:at]
    junk = data.draw(st.binary(min_size=1, max_size=64), label="junk")
    if kind == "overwrite":
        return raw[:at] + junk + raw[at + len(junk):]
    return raw[:at] + junk + raw[at:]


@pytest.mark.parametrize("ext", ["pdf", "docx"])
@FUZZ
@given(data=st.data())
def test_pdf_and_docx_bytes_give_a_document_or_a_dead_letter(ext, data):
    """Valid PDF and DOCX files broken at random places (or random bytes) through the per-file
    step: an indexed document or a typed dead letter, never an exception or a hang."""
    seeds = _seeds(ext)
    raw = data.draw(st.one_of(st.sampled_from(seeds).flatmap(lambda s: st.just(s)), st.binary(max_size=400)),
                    label="seed")
    raw = _mutated(raw, data)
    with watchdog():
        out = load_document(_binary_task(ext), CONFIG.model_copy(update={"limits": LimitsConfig(
            max_file_bytes=1 << 20, max_sections_per_doc=50)}).slices.parse, _open_bytes(raw), lambda *parts: "/".join(parts))
    assert isinstance(out, (IndexedDocument, DeadLetter))
    if isinstance(out, DeadLetter):
        assert DeadLetterReason(out.reason) in REASONS and out.detail
    else:
        assert out.chunks and all(c.text.strip() for c in out.chunks)
