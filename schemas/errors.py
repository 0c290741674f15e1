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
    OUTSIDE_DOMAIN = "outside_domain"  # a file directly in the corpus root, in no domain folder
    PARSE_ERROR = "parse_error"
    READ_ERROR = "read_error"
    NO_CONTENT = "no_content"
    REDIRECT = "redirect"              # an HTML page that only sends the reader to another page
    ENCRYPTED = "encrypted"            # a PDF or DOCX that needs a password
    CORRUPT = "corrupt"                # a PDF or DOCX its library cannot read
    NO_TEXT_LAYER = "no_text_layer"    # a PDF whose pages hold no text (scanned images)
    # corpus scan: files and folders the scan refuses (vdgr_core/corpus.py)
    INVALID_NAME = "invalid_name"            # a file or folder name that is not valid UTF-8
    OUTSIDE_ROOT = "outside_root"            # a symlink that leads out of the corpus root
    SYMLINK_LOOP = "symlink_loop"            # a symlinked folder already scanned (a loop or an alias)
    TOO_DEEP = "too_deep"                    # a folder nested deeper than limits.max_folder_depth
    NOT_REGULAR = "not_regular_file"         # a FIFO, socket, device or dangling symlink


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


class StoreUnreachableError(VdgrError):
    """The object store holding the index cannot be reached or refuses the request (no
    credentials, no network, no permission): nothing was read or written."""


class LLMError(VdgrError):
    """The LLM endpoint failed or answered out of contract after all retries."""


class EmbeddingError(VdgrError):
    """The embedder could not embed (model failed to load, worker process died)."""



# --- writer lock and commit (harden-store) ---------------------------------------------------
class IndexBusyError(VdgrError):
    """Another process holds the index's writer lock (``vdgr index``/``update``/``gc``)."""


class ConcurrentCommitError(VdgrError):
    """The index's manifest changed under a writer: its commit would replace a newer one."""


class PipelineFailedError(VdgrError):
    """The Beam job failed on its runner (an SDK worker lost, a step raised there); nothing of
    the run was committed."""


class RowsLostError(VdgrError):
    """Fewer (or more) rows of a table reached its writers than the steps before them produced:
    the runner lost or repeated elements between steps. The publish step refuses, so the build
    fails and nothing of the run is committed."""


class RunnerUnavailableError(VdgrError):
    """The named Beam runner could not start here (its job server jar cannot be had, no Java,
    its Beam extra not installed); no job ran and nothing was committed."""


class QuestionFileError(VdgrError):
    """A line of a JSONL question file is not a question (``vdgr query --questions``)."""
