"""Conditional create of manifest generations on object stores: a real S3 protocol server
(moto's, on 127.0.0.1) decides which of two racing writers wins; ``file://`` is exclusive."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.moto_s3 import moto_bucket
from vdgr_core.store.conditional import conditional_create
from vdgr_core.store.location import IndexLocation

BUCKET = "vdgr-test-bucket"


@pytest.fixture(scope="module")
def s3_server():
    with pytest.MonkeyPatch.context() as mp, moto_bucket(mp, BUCKET):
        yield f"s3://{BUCKET}"


def test_s3_create_if_absent_is_decided_by_the_store(s3_server):
    loc = IndexLocation(f"{s3_server}/index-a")
    assert loc.create_if_absent("manifests/00000001.json", b"first") is True
    assert loc.create_if_absent("manifests/00000001.json", b"second") is False
    assert loc.read_bytes("manifests/00000001.json") == b"first"        # the winner's bytes stay


def test_of_racing_s3_writers_exactly_one_wins(s3_server):
    loc = IndexLocation(f"{s3_server}/index-b")
    with ThreadPoolExecutor(max_workers=8) as pool:
        won = list(pool.map(lambda i: loc.create_if_absent("manifests/00000007.json", f"w{i}".encode()),
                            range(8)))
    assert won.count(True) == 1
    assert loc.read_bytes("manifests/00000007.json") == f"w{won.index(True)}".encode()


def test_an_index_uri_with_options_creates_its_files_under_the_index(s3_server):
    # the query string holds pyarrow.fs options: the files go under the index's prefix (not to
    # an object named after the index), through pyarrow.fs, which reads those options
    loc = IndexLocation(f"{s3_server}/index-q?region=us-east-1")
    assert loc.join("manifests", "00000001.json") == f"{s3_server}/index-q/manifests/00000001.json?region=us-east-1"
    assert conditional_create(loc.join("manifests", "00000001.json"), b"x") is None
    assert loc.create_if_absent("manifests/00000001.json", b"first") is True
    assert loc.create_if_absent("manifests/00000001.json", b"second") is False
    assert IndexLocation(f"{s3_server}/index-q").read_bytes("manifests/00000001.json") == b"first"
    assert loc.write_missing({"vectors/ab/block.bin": b"v"}) == 1
    assert IndexLocation(f"{s3_server}/index-q").read_bytes("vectors/ab/block.bin") == b"v"


def test_unknown_schemes_have_no_conditional_create():
    assert conditional_create("memory://x/y", b"z") is None


def test_file_uri_create_is_exclusive(tmp_path):
    loc = IndexLocation("file://" + str(tmp_path / "idx"))
    with ThreadPoolExecutor(max_workers=8) as pool:
        won = list(pool.map(lambda i: loc.create_if_absent("gen/1.json", f"w{i}".encode()), range(8)))
    assert won.count(True) == 1
