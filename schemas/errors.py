"""Typed errors and dead-letter reasons."""
from __future__ import annotations

import enum


class DeadLetterReason(str, enum.Enum):
    EMPTY = "empty"
    BINARY = "binary"
    UNDECODABLE = "undecodable"
    TRUNCATED = "truncated"
    TOO_LARGE = "too_large"
    UNSUPPORTED = "unsupported_format"
    PARSE_ERROR = "parse_error"
    READ_ERROR = "read_error"
    NO_CONTENT = "no_content"


class VdgrError(Exception):
    """Base class of every error VDGR raises on purpose."""


class DocumentError(VdgrError):
    """A document cannot be indexed; carries the dead-letter reason."""

    def __init__(self, reason: DeadLetterReason, detail: str):
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail


class ConfigError(VdgrError):
    """Invalid configuration."""


class SettingsChangeError(ConfigError):
    """An update was asked to use build settings other than the ones the index records.

    A settings change rebuilds every domain; it must be asked for explicitly
    (``vdgr update --new-settings``, ``run_update(..., settings_change=True)``).
    """


class IndexError_(VdgrError):
    """The index is missing, incomplete or of an unknown format."""


class LLMError(VdgrError):
    """The LLM endpoint failed or answered out of contract after all retries."""


class EmbeddingError(VdgrError):
    """The embedder could not embed (model failed to load, worker process died)."""
