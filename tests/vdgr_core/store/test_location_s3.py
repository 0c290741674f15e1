"""An index folder on S3 (moto's server): folders are published and fetched whole, each small
file in one request (a single-part object), with no directory marker objects."""
from __future__ import annotations

import os

import pytest

from schemas.errors import IndexError_
from tests.support.moto_s3 import moto_bucket
from vdgr_core.store.location import COMPLETE_MARKER, IndexLocation

pytest.importorskip("moto.server")
pytest.importorskip("boto3")

BUCKET = "vdgr-location"


@pytest.fixture
def s3(monkeypatch):
    with moto_bucket(monkeypatch, BUCKET) as client:
        yield client


def _folder(path, n: int) -> dict[str, bytes]:
    os.makedirs(path)
    files = {f"f{i:02d}.bin": bytes([i]) * (i * 1000 + 1) for i in range(n)}
    for name, data in files.items():
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)
    return files


def test_a_folder_is_published_and_fetched_whole_one_put_per_file(s3, tmp_path):
    loc = IndexLocation(f"s3://{BUCKET}/index")
    files = _folder(tmp_path / "shard", 20)
    loc.publish_folder(str(tmp_path / "shard"), "tantivy/net/abc")
    assert not (tmp_path / "shard").exists()
    assert loc.folder_complete("tantivy/net/abc")

    objects = s3.list_objects_v2(Bucket=BUCKET, Prefix="index/")["Contents"]
    keys = sorted(o["Key"] for o in objects)
    assert keys == sorted([f"index/tantivy/net/abc/{n}" for n in files] + [f"index/tantivy/net/abc/{COMPLETE_MARKER}"])
    assert not any("-" in o["ETag"] for o in objects)      # a multipart upload's ETag ends in -<parts>

    loc.fetch_folder("tantivy/net/abc", str(tmp_path / "copy"))
    got = {n: (tmp_path / "copy" / n).read_bytes() for n in os.listdir(tmp_path / "copy")}
    assert got == files

    loc.write_whole("vectors/net/x.npy", b"\x93NUMPY")
    assert "-" not in s3.head_object(Bucket=BUCKET, Key="index/vectors/net/x.npy")["ETag"]
    assert loc.read_bytes("vectors/net/x.npy") == b"\x93NUMPY"


def test_a_fetch_names_a_file_missing_from_a_published_folder(s3, tmp_path):
    loc = IndexLocation(f"s3://{BUCKET}/index")
    _folder(tmp_path / "shard", 5)
    loc.publish_folder(str(tmp_path / "shard"), "layout/net/def")
    s3.delete_object(Bucket=BUCKET, Key="index/layout/net/def/f03.bin")
    with pytest.raises(IndexError_, match="f03.bin is missing from a published folder"):
        loc.fetch_folder("layout/net/def", str(tmp_path / "copy"))
    with pytest.raises(IndexError_, match="no _complete.json"):
        loc.fetch_folder("layout/net/none", str(tmp_path / "copy2"))


def test_missing_files_are_written_and_present_ones_left_as_they_are(s3):
    loc = IndexLocation(f"s3://{BUCKET}/index")
    loc.write_whole("vectors/net/a.npy", b"kept")
    files = {f"vectors/net/{c}.npy": c.encode() * 10 for c in "abcdefghij"}
    assert loc.write_missing(files) == 9
    assert loc.read_bytes("vectors/net/a.npy") == b"kept"        # content-addressed: not sent again
    assert all(loc.read_bytes(rel) == data for rel, data in files.items() if not rel.endswith("/a.npy"))
    assert loc.write_missing(files) == 0
    # one file system per URI and AWS environment, however many locations are made
    assert IndexLocation(f"s3://{BUCKET}/index")._fs is loc._fs
