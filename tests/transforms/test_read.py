"""transforms.read.open_read: an ``s3://`` object in one GET (Beam's open asks for a HEAD first);
a missing object is a read error; a local file reads as stored."""
from __future__ import annotations

import pytest

pytest.importorskip("moto.server")
pytest.importorskip("boto3")

import apache_beam as beam  # noqa: E402
from apache_beam.io.aws import s3io  # noqa: E402
from apache_beam.io.filesystems import FileSystems  # noqa: E402
from apache_beam.runners.portability.fn_api_runner import FnApiRunner  # noqa: E402
from apache_beam.testing.test_pipeline import TestPipeline  # noqa: E402
from apache_beam.testing.util import assert_that, equal_to  # noqa: E402

from pipelines.options import use_filesystem_options  # noqa: E402
from schemas.config import BuildConfig  # noqa: E402
from schemas.errors import DeadLetterReason  # noqa: E402
from schemas.records import DocMeta, DocumentTask  # noqa: E402
from tests.support.moto_s3 import moto_bucket  # noqa: E402
from transforms.parse import DEAD_LETTER, ParseDocuments  # noqa: E402
from transforms.read import open_read  # noqa: E402

BUCKET = "vdgr-read"
DOC = b"# Install\n\nRun the installer and follow the prompts.\n"


@pytest.fixture
def s3(monkeypatch):
    with moto_bucket(monkeypatch, BUCKET) as client:
        client.put_object(Bucket=BUCKET, Key="corpus/Manual/install.md", Body=DOC)
        use_filesystem_options([])
        yield f"s3://{BUCKET}/corpus"


@pytest.fixture
def s3_calls(s3):
    """The S3 operations the process's shared client sends while the test runs."""
    client = s3io.S3IO(options=use_filesystem_options([])).client.client
    calls: list[str] = []

    def record(model, **_):
        calls.append(model.name)
    client.meta.events.register("before-call.s3", record, unique_id="test_read")
    yield calls
    client.meta.events.unregister("before-call.s3", unique_id="test_read")


def test_an_s3_object_is_read_with_one_get(s3, s3_calls):
    with open_read(f"{s3}/Manual/install.md") as f:
        assert f.read(9) == DOC[:9]
    assert s3_calls == ["GetObject"]
    # the read this replaces: Beam's open asks for the object's metadata first
    s3_calls.clear()
    with FileSystems.open(f"{s3}/Manual/install.md") as f:
        assert f.read() == DOC
    assert s3_calls[0] == "HeadObject" and "GetObject" in s3_calls


def test_a_build_reads_each_s3_document_with_one_get_and_dead_letters_a_missing_one(s3, s3_calls):
    """A real Beam pipeline (FnApiRunner, in this process: its S3 calls are this client's)."""
    tasks = [DocumentTask(s3, f"Manual/{n}", "Manual", "", (), DocMeta()) for n in ("install.md", "gone.md")]
    parse = BuildConfig(corpus=s3, index=f"{s3}-index").slices.parse
    with TestPipeline(runner=FnApiRunner()) as p:
        out = p | beam.Create(tasks) | ParseDocuments(parse)
        assert_that(out.documents | "titles" >> beam.Map(lambda d: (d.task.rel_path, d.title)),
                    equal_to([("Manual/install.md", "Install")]), label="read")
        assert_that(out[DEAD_LETTER] | "reasons" >> beam.MapTuple(lambda d, t: (d.rel_path, d.reason)),
                    equal_to([("Manual/gone.md", DeadLetterReason.READ_ERROR.value)]), label="missing")
    assert sorted(s3_calls) == ["GetObject", "GetObject"]
    with pytest.raises(FileNotFoundError):
        open_read(f"{s3}/Manual/gone.md")


def test_a_local_file_reads_as_stored(tmp_path):
    (tmp_path / "notes.md").write_bytes(DOC)
    with open_read(str(tmp_path / "notes.md")) as f:
        assert f.read() == DOC
