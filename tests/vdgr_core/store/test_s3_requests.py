"""Requests an S3 build spends on small files, counted in the log of a real S3 protocol server
(moto's, on 127.0.0.1): a corpus folder's ``_meta.yaml`` is one ``GET``; a content-addressed
file is one conditional ``PUT``, written once."""
from __future__ import annotations

import re
import time
from collections import Counter

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("boto3")

from tests.support.cluster import S3Endpoint  # noqa: E402
from vdgr_core.corpus import scan_corpus  # noqa: E402
from vdgr_core.store.location import IndexLocation  # noqa: E402
from vdgr_core.store.s3_client import read_object  # noqa: E402

BUCKET = "vdgr-requests"
_REQUEST = re.compile(r'"([A-Z]+) (\S+) HTTP/[0-9.]+" (\d{3})')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _Log:
    def __init__(self, path):
        self.path, self.at = path, 0

    def mark(self) -> None:
        self.at = self.path.stat().st_size

    def _read(self) -> list[tuple[str, str, str]]:
        with open(self.path, "rb") as f:
            f.seek(self.at)
            text = _ANSI.sub("", f.read().decode("utf-8", "replace"))     # werkzeug may colour 4xx lines
        return [("LIST" if m == "GET" and "list-type=" in t else m, t, code) for m, t, code in _REQUEST.findall(text)]

    def since(self, until=lambda got: True, wait_s: float = 10.0) -> list[tuple[str, str, str]]:
        """The requests logged since :meth:`mark`, once ``until(them)`` holds: the server logs
        a request after it has answered it, so the last lines may come after the client is
        done (a wait for an event, bounded; no figure depends on how long it takes)."""
        deadline = time.monotonic() + wait_s
        got = self._read()
        while not until(got) and time.monotonic() < deadline:
            time.sleep(0.05)
            got = self._read()
        return got


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("s3log") / "requests.log"
    with S3Endpoint(str(log)) as endpoint:
        endpoint.client().create_bucket(Bucket=BUCKET)
        yield endpoint, _Log(log)


@pytest.fixture
def s3(server, monkeypatch):
    endpoint, log = server
    for k, v in endpoint.env().items():
        monkeypatch.setenv(k, v)
    return endpoint, log


def test_a_corpus_scan_reads_each_meta_file_with_one_get(s3):
    endpoint, log = s3
    client = endpoint.client()
    for key, body in {"corpus/net/_meta.yaml": "acl: [staff]\n", "corpus/net/a/_meta.yaml": "version: '2'\n",
                      "corpus/net/a/x.md": "# A\n\nhello\n", "corpus/net/b/_meta.yaml": "version: '3'\n",
                      "corpus/net/b/y.md": "# B\n\nworld\n"}.items():
        client.put_object(Bucket=BUCKET, Key=key, Body=body.encode())
    log.mark()
    scan = scan_corpus(f"s3://{BUCKET}/corpus")
    assert [(t.rel_path, t.meta.version, t.meta.acl) for t in scan.tasks] == [
        ("net/a/x.md", "2", ("staff",)), ("net/b/y.md", "3", ("staff",))]
    on_meta = Counter(m for m, target, _ in log.since(lambda got: sum(t.endswith("_meta.yaml") for _, t, _ in got) >= 3)
                      if target.endswith("_meta.yaml"))
    assert on_meta == {"GET": 3}


def test_an_unreadable_meta_file_on_s3_is_a_typed_error(s3):
    from schemas.errors import ConfigError

    endpoint, _ = s3
    client = endpoint.client()
    client.put_object(Bucket=BUCKET, Key="bad/net/_meta.yaml", Body=b"\xff\xfe not utf-8")
    client.put_object(Bucket=BUCKET, Key="bad/net/x.md", Body=b"# X\n")
    with pytest.raises(ConfigError, match="_meta.yaml: cannot read"):
        scan_corpus(f"s3://{BUCKET}/bad")


def test_content_addressed_files_are_one_conditional_put_each(s3):
    _, log = s3
    loc = IndexLocation(f"s3://{BUCKET}/index")
    files = {f"vectors/net/{i:024x}.npy": f"block {i}".encode() for i in range(3)}
    log.mark()
    assert loc.write_missing(files) == 3
    first = log.since(lambda got: len(got) >= 3)
    assert Counter(m for m, _, _ in first) == {"PUT": 3}
    log.mark()
    assert loc.write_missing({**files, "vectors/net/new.npy": b"new"}) == 1     # the three exist
    assert sorted(code for m, _, code in log.since(lambda got: len(got) >= 4)) == ["200", "412", "412", "412"]
    assert loc.read_bytes("vectors/net/000000000000000000000001.npy") == b"block 1"


def test_read_object_reads_plain_s3_uris_only(s3):
    endpoint, _ = s3
    endpoint.client().put_object(Bucket=BUCKET, Key="plain/one.txt", Body=b"one")
    assert read_object(f"s3://{BUCKET}/plain/one.txt") == b"one"
    with pytest.raises(FileNotFoundError):
        read_object(f"s3://{BUCKET}/plain/missing.txt")
    assert read_object("gs://bucket/one.txt") is None
    assert read_object(f"s3://{BUCKET}/plain/one.txt?endpoint_override=x") is None


def test_of_several_bad_meta_files_the_scan_names_the_first_in_scan_order(s3):
    """Meta files are read at once on an object store; the error is still the first folder's."""
    from schemas.errors import ConfigError

    endpoint, _ = s3
    client = endpoint.client()
    for i in range(20):
        body = b"\xff not utf-8" if i in (7, 13) else f"version: '{i}'\n".encode()
        client.put_object(Bucket=BUCKET, Key=f"many/net/f{i:02d}/_meta.yaml", Body=body)
        client.put_object(Bucket=BUCKET, Key=f"many/net/f{i:02d}/x.md", Body=b"# X\n")
    with pytest.raises(ConfigError, match=r"many/net/f07/_meta\.yaml: cannot read"):
        scan_corpus(f"s3://{BUCKET}/many")
