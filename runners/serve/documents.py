"""``GET /v1/documents/{id}``: the source file of one indexed document, for a reader of it.

The manifest records no corpus root (an index can be served far from where it was built), so
the service is told it (``vdgr serve --corpus DIR``); without one no document is served.

What a caller learns:

* a document the caller may not read (its ACL names none of the caller's groups), a dead
  letter, an id that is not a document's and an id that is not an id at all get the same
  404 with the same message: nobody learns that a document they cannot read exists;
* the file is read only below the corpus root, after symlinks are resolved (a row whose path
  leads outside, ``..`` or absolute, is not served) and only when its bytes are the ones that
  were indexed (``documents.content_hash``; at most the build's ``max_file_bytes`` are read):
  a file changed since the build was not scanned for credentials nor checked against its
  ACL, so it waits for the next update;
* a document in which credentials were masked at index time (``secret_findings``) is not
  served either: its file still holds them.

PDFs are served inline as ``application/pdf`` (a viewer opens ``#page=N``); text formats
(Markdown, HTML, plain text) as ``text/plain`` so that retrieved markup is never rendered; any
other format as an attachment. Every answer carries ``X-Content-Type-Options: nosniff`` and a
policy that forbids framing it.
"""
from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Optional, Sequence
from urllib.parse import quote

from runners.serve.errors import ApiError
from schemas.errors import ConfigError
from vdgr_core.ids import content_hash
from schemas import tables as T
from vdgr_core.store.reader import IndexReader

DOC_ID = re.compile(r"^[0-9a-f]{32}$")
NOT_FOUND = "document not found"
DEFAULT_MAX_BYTES = 20_000_000        # LimitsConfig.max_file_bytes, when the manifest records none

_TEXT = {".md", ".markdown", ".txt", ".text", ".rst", ".html", ".htm", ".xhtml", ".csv", ".json",
         ".yaml", ".yml", ".adoc"}
_ATTACHMENT = {".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}


@dataclass(frozen=True)
class DocumentRow:
    """What the route needs of one ``documents`` row."""

    path: str
    acl: tuple[str, ...]
    content_hash: str
    masked: bool            # credentials were masked in it at index time


@dataclass(frozen=True)
class ServedFile:
    """The bytes of a document and how to answer them."""

    body: bytes
    media_type: str
    headers: dict


def media_type(path: str) -> tuple[str, str]:
    """(Content-Type, disposition) of a corpus file, by its suffix."""
    ext = os.path.splitext(path)[1].lower()
    if ext == ".pdf":
        return "application/pdf", "inline"
    if ext in _TEXT:
        return "text/plain; charset=utf-8", "inline"
    return _ATTACHMENT.get(ext, "application/octet-stream"), "attachment"


class DocumentSource:
    """The documents of the current build, served from ``corpus`` (None: none served).

    Parameters
    ----------
    corpus : str, optional
        The corpus root the index was built from.

    Raises
    ------
    ConfigError
        ``corpus`` is not a folder.
    """

    def __init__(self, corpus: Optional[str]):
        if corpus and not os.path.isdir(corpus):
            raise ConfigError(f"--corpus {corpus!r} is not a folder")
        self.root = os.path.realpath(corpus) if corpus else None
        self._rows: tuple[str, dict[str, DocumentRow]] = ("", {})
        self._lock = threading.Lock()

    def _table(self, reader: IndexReader) -> dict[str, DocumentRow]:
        """doc_id -> row of the indexed documents of ``reader``'s build (cached per build)."""
        build = reader.manifest.build_id
        with self._lock:
            if self._rows[0] == build:
                return self._rows[1]
        if T.DOCUMENTS not in reader.manifest.table_versions:
            return {}
        docs = reader.arrow(T.DOCUMENTS, ["doc_id", "path", "acl", "content_hash", "status"]).to_pylist()
        masked = set(reader.arrow(T.SECRET_FINDINGS, ["path"]).column("path").to_pylist()) \
            if T.SECRET_FINDINGS in reader.manifest.table_versions else set()
        rows = {d["doc_id"]: DocumentRow(d["path"], tuple(d["acl"] or ()), d["content_hash"] or "",
                                         d["path"] in masked)
                for d in docs if d["status"] == "indexed"}
        with self._lock:
            self._rows = (build, rows)
        return rows

    def fetch(self, reader: IndexReader, doc_id: str, groups: Sequence[str]) -> ServedFile:
        """The file of document ``doc_id`` for a caller in ``groups``.

        Raises
        ------
        ApiError
            404 for every document the caller cannot have (the same answer whether it is
            missing or forbidden); 404 naming ``--corpus`` when no corpus root was given; 403
            for a readable document whose file holds masked credentials; 409 when the file
            changed since the build or is gone.
        """
        if self.root is None:
            raise ApiError(404, "documents are not served: vdgr serve was started without --corpus")
        row = self._table(reader).get(doc_id) if DOC_ID.match(doc_id) else None
        if row is None or (row.acl and not set(row.acl).intersection(groups)):
            raise ApiError(404, NOT_FOUND)
        full = self._inside(row.path)
        if full is None:
            raise ApiError(404, NOT_FOUND)
        if row.masked:
            raise ApiError(403, "this document's source is not served: credentials were masked in it "
                                "when it was indexed")
        cap = int(reader.manifest.config.get("limits", {}).get("max_file_bytes", DEFAULT_MAX_BYTES))
        try:
            if not os.path.isfile(full):
                raise FileNotFoundError(full)
            with open(full, "rb") as f:      # no more than an indexed file can hold
                body = f.read(cap + 1)
        except OSError:        # gone, or no longer a file
            raise ApiError(409, "the source file is no longer in the corpus; it is served again after "
                                "the next update") from None
        if len(body) > cap or content_hash(body) != row.content_hash:
            raise ApiError(409, "the source file changed since the index was built; it is served again "
                                "after the next update")
        kind, disposition = media_type(row.path)
        name = os.path.basename(row.path)
        headers = {"Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(name, safe='')}",
                   "X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-store"}
        # the PDF viewer is a plugin, which a sandbox (or object-src 'none') forbids; never framed
        headers["Content-Security-Policy"] = "frame-ancestors 'none'" if kind == "application/pdf" else \
            "sandbox; default-src 'none'; frame-ancestors 'none'"
        return ServedFile(body, kind, headers)

    def _inside(self, rel: str) -> Optional[str]:
        """The real path of corpus path ``rel`` when it lies below the root, else None."""
        parts = rel.split("/")
        if not rel or rel.startswith("/") or "\\" in rel or any(p in ("", ".", "..") for p in parts):
            return None
        full = os.path.realpath(os.path.join(self.root, *parts))
        return full if os.path.commonpath([self.root, full]) == self.root else None
