"""Durability helpers of vdgr_core/store/location.py: which system call makes files durable."""
from __future__ import annotations

import os
import sys

import pytest

from vdgr_core.store.location import SYNCFS_MIN_FILES, make_durable, safe_name


def _files(folder, n: int) -> list[str]:
    paths = []
    for i in range(n):
        path = os.path.join(folder, f"f{i}")
        with open(path, "wb") as f:
            f.write(b"x" * 10)
        paths.append(path)
    return paths


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs is Linux's")
def test_many_files_take_one_syncfs_and_a_few_an_fsync_each(tmp_path, durability_calls):
    calls = durability_calls
    make_durable(_files(tmp_path, SYNCFS_MIN_FILES), str(tmp_path))
    assert calls == {"syncfs": 1, "fsync": 0}
    few = tmp_path / "few"
    few.mkdir()
    make_durable(_files(few, 3), str(few))
    assert calls == {"syncfs": 1, "fsync": 4}          # each file, then the folder


def test_safe_name_keeps_letters_digits_and_dot_dash_underscore():
    assert safe_name("Galaxy S20+ 5G/x.y-z_w") == "Galaxy_S20__5G_x.y-z_w"
