"""Document fingerprints: what an incremental update compares to find changed documents.

A fingerprint covers the file's bytes and everything resolved around it that changes its
nodes (metadata from `_meta.yaml` files, folder titles), so editing a `_meta.yaml` re-indexes
the documents under it even when their bytes did not change.
"""
from __future__ import annotations

from schemas.records import DocumentTask
from vdgr_core.ids import document_fingerprint, stable_id


def task_fingerprint(task: DocumentTask, content_sha256: str) -> str:
    context = repr((task.rel_path, task.collection, task.folder_titles, task.meta, task.folder_metas))
    return document_fingerprint(content_sha256, context)


def skipped_fingerprint(rel_path: str, reason: str = "unsupported_format", detail: str = "") -> str:
    """Files the scan skips are compared by path, and by why when the scan refused them
    (a symlink that now leads out of the root, a folder now too deep...); an unsupported
    format by path only."""
    if reason == "unsupported_format":
        return stable_id("skipped", rel_path)
    return stable_id("skipped", rel_path, reason, detail)
