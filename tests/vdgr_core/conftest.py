"""Fixtures of the vdgr_core tests."""
from __future__ import annotations

import os

import pytest


@pytest.fixture
def durability_calls(monkeypatch):
    """Counts of ``syncfs`` and ``fsync`` calls made through vdgr_core/store/location.py (both
    still made)."""
    from vdgr_core.store import location

    calls = {"syncfs": 0, "fsync": 0}
    real_syncfs, real_fsync = location._syncfs, os.fsync

    def counted_syncfs(fd):
        calls["syncfs"] += 1
        return real_syncfs(fd)

    def counted_fsync(fd):
        calls["fsync"] += 1
        return real_fsync(fd)

    monkeypatch.setattr(location, "_syncfs", counted_syncfs)
    monkeypatch.setattr(location.os, "fsync", counted_fsync)
    return calls
