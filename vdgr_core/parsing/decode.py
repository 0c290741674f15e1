"""Turn the raw bytes of a document into text, or say precisely why that is impossible."""
from __future__ import annotations

import codecs
import re

from schemas.errors import DeadLetterReason, DocumentError

_SAMPLE_BYTES = 8192
_MAX_CONTROL_RATIO = 0.10


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")   # controls other than \t \n \f \r


def _control_ratio(chars: str) -> float:
    if not chars:
        return 0.0
    return len(_CONTROL.findall(chars)) / len(chars)


def _check_binary_bytes(sample: bytes) -> None:
    if b"\x00" in sample:
        raise DocumentError(DeadLetterReason.BINARY, "NUL byte in the first 8 KiB")
    ratio = _control_ratio(sample.decode("latin-1"))
    if ratio > _MAX_CONTROL_RATIO:
        raise DocumentError(DeadLetterReason.BINARY, f"{ratio:.0%} control characters")


def _check_binary_text(text: str) -> None:
    sample = text[:_SAMPLE_BYTES]
    if "\x00" in sample:
        raise DocumentError(DeadLetterReason.BINARY, "NUL character in the first 8 KiB")
    ratio = _control_ratio(sample)
    if ratio > _MAX_CONTROL_RATIO:
        raise DocumentError(DeadLetterReason.BINARY, f"{ratio:.0%} control characters")


def _decode(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        at_end = e.end >= len(data) and e.reason in ("unexpected end of data", "truncated data")
        if at_end:
            try:
                data[: e.start].decode(encoding)
            except UnicodeDecodeError:
                pass
            else:
                raise DocumentError(
                    DeadLetterReason.TRUNCATED,
                    f"incomplete {encoding} sequence at byte {e.start} of {len(data)}",
                ) from None
        raise DocumentError(
            DeadLetterReason.UNDECODABLE, f"not {encoding}: {e.reason} at byte {e.start}"
        ) from None


def check_size(data: bytes, max_bytes: int) -> None:
    """Refuse a document larger than ``max_bytes`` (TOO_LARGE) or of zero bytes (EMPTY)."""
    if len(data) > max_bytes:
        raise DocumentError(DeadLetterReason.TOO_LARGE, f"{len(data)} bytes > limit {max_bytes}")
    if not data:
        raise DocumentError(DeadLetterReason.EMPTY, "zero bytes")


def decode_document(data: bytes, max_bytes: int) -> str:
    """Decode the bytes of a document into text with ``\\n`` newlines.

    Parameters
    ----------
    data:
        Raw file content.
    max_bytes:
        Largest accepted size in bytes.

    Returns
    -------
    str
        The text, BOM removed, ``\\r\\n`` and ``\\r`` turned into ``\\n``.

    Raises
    ------
    DocumentError
        TOO_LARGE, EMPTY, BINARY, TRUNCATED (valid UTF-8 cut inside a final multibyte
        sequence) or UNDECODABLE (neither UTF-8 nor UTF-16 with a BOM).
    """
    check_size(data, max_bytes)
    if data.startswith(codecs.BOM_UTF8):
        body, encoding = data[len(codecs.BOM_UTF8):], "utf-8"
    elif data.startswith(codecs.BOM_UTF16_LE) or data.startswith(codecs.BOM_UTF16_BE):
        body, encoding = data, "utf-16"   # the codec reads and drops the BOM
    else:
        body, encoding = data, "utf-8"
    if encoding == "utf-8":
        _check_binary_bytes(body[:_SAMPLE_BYTES])
        text = _decode(body, encoding)
    else:
        text = _decode(body, encoding)
        _check_binary_text(text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise DocumentError(DeadLetterReason.EMPTY, "only whitespace")
    return text
