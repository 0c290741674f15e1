import codecs

import pytest

from schemas.errors import DeadLetterReason, DocumentError
from vdgr_core.parsing.decode import decode_document


def _reason(data: bytes, max_bytes: int = 1000) -> DeadLetterReason:
    with pytest.raises(DocumentError) as e:
        decode_document(data, max_bytes)
    return e.value.reason


def test_plain_utf8_and_newlines_normalized():
    assert decode_document("a\r\nb\rc\nd é".encode(), 100) == "a\nb\nc\nd é"


def test_boms_are_removed():
    assert decode_document(codecs.BOM_UTF8 + "héllo".encode(), 100) == "héllo"
    assert decode_document("héllo\r\nx".encode("utf-16"), 100) == "héllo\nx"
    assert decode_document(codecs.BOM_UTF16_BE + "hi".encode("utf-16-be"), 100) == "hi"


def test_too_large():
    assert _reason(b"x" * 11, max_bytes=10) == DeadLetterReason.TOO_LARGE
    assert decode_document(b"x" * 10, 10) == "x" * 10


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n ", codecs.BOM_UTF8, codecs.BOM_UTF8 + b"\n"])
def test_empty(data):
    assert _reason(data) == DeadLetterReason.EMPTY


def test_binary_nul_and_controls():
    assert _reason(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR") == DeadLetterReason.BINARY
    assert _reason(b"abc" + bytes(range(1, 9)) * 2) == DeadLetterReason.BINARY
    # tabs, form feeds and a few stray controls are fine
    assert decode_document(b"a\tb\fc" + b"x" * 50 + b"\x1b", 1000).startswith("a\tb\fc")


def test_nul_after_first_8k_is_not_binary_check_but_still_decodes():
    data = b"a" * 9000 + b"\x00"
    assert decode_document(data, 10_000).endswith("\x00")


def test_truncated_multibyte_at_end():
    data = "prix: 10 €".encode()
    assert _reason(data[:-1]) == DeadLetterReason.TRUNCATED
    assert _reason(data[:-2]) == DeadLetterReason.TRUNCATED


def test_undecodable_latin1_and_invalid_middle():
    assert _reason("café au lait".encode("latin-1")) == DeadLetterReason.UNDECODABLE
    # an invalid sequence that is not at the very end is not "truncated"
    assert _reason(b"ab\xe2\x82cd") == DeadLetterReason.UNDECODABLE


def test_truncated_utf16():
    assert _reason("hello".encode("utf-16")[:-1]) == DeadLetterReason.TRUNCATED
