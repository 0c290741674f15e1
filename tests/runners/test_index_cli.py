"""`vdgr index` through runners.cli.main: runner presets, flags, refusal of unsupported URIs."""
from __future__ import annotations

import re

import pytest

from runners.cli import main
from runners.presets import PRESETS, apply_preset
from schemas import tables as T
from tests.support.corpus import SMALL, write_corpus
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.writer import table_digest

FILES = SMALL


def _digests(index: str) -> dict[str, str]:
    reader = IndexReader(index)
    return {n: table_digest(n, reader.arrow(n)) for n in T.TABLES}


def test_multiprocess_preset_builds_the_same_index_as_the_default(tmp_path, capsys):
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    common = [corpus, "--embedding", "hashing", "-q"]
    assert main(["index", *common, "--index", str(tmp_path / "direct")]) == 0
    assert main(["index", *common, "--index", str(tmp_path / "mp"), "--preset", "multiprocess"]) == 0
    direct, mp = _digests(str(tmp_path / "direct")), _digests(str(tmp_path / "mp"))
    assert IndexReader(str(tmp_path / "direct")).manifest.counts[T.CONTENTS] >= 4
    assert mp == direct
    assert (IndexReader(str(tmp_path / "mp")).manifest.build_id
            == IndexReader(str(tmp_path / "direct")).manifest.build_id)
    assert re.search(r"dead letters\s+1 of 4 files", capsys.readouterr().out)


def test_portable_runner_with_a_local_job_service_builds_the_same_index(tmp_path):
    """The job-submission path Flink and Spark use: PortableRunner, an embedded job service,
    workers talking the Fn API over gRPC (LOOPBACK)."""
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    common = [corpus, "--embedding", "hashing", "-q"]
    assert main(["index", *common, "--index", str(tmp_path / "direct")]) == 0
    assert main(["index", *common, "--index", str(tmp_path / "portable"), "--runner=PortableRunner",
                 "--job_endpoint=embed", "--environment_type=LOOPBACK"]) == 0
    assert _digests(str(tmp_path / "portable")) == _digests(str(tmp_path / "direct"))
    # and an update through the same runner equals a rebuild
    with open(f"{corpus}/hr/leave.md", "a", encoding="utf-8") as f:
        f.write("\n## Sick leave\n\nReport sick leave within one day.\n")
    assert main(["update", *common, "--index", str(tmp_path / "portable"), "--in-driver-max-documents=0",
                 "--runner=PortableRunner", "--job_endpoint=embed", "--environment_type=LOOPBACK"]) == 0
    assert main(["index", *common, "--index", str(tmp_path / "fresh")]) == 0
    assert _digests(str(tmp_path / "portable")) == _digests(str(tmp_path / "fresh"))


def test_a_runner_that_cannot_start_here_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    """FlinkRunner without its job server jar (Beam fetches it from Maven Central, which these
    machines do not reach; docs/RUNNERS.md): a typed error naming the jar, exit 2, nothing
    committed. The jar is named by a ``file://`` URL that does not exist, so Beam's own fetch path
    runs and fails without touching the network."""
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index = tmp_path / "index"
    jar = "beam-runners-flink-1.20-job-server-2.77.0.jar"
    rc = main(["index", corpus, "--embedding", "hashing", "-q", "--index", str(index),
               "--runner=FlinkRunner", "--flink_version=1.20",
               f"--flink_job_server_jar=file://{tmp_path}/missing/{jar}", f"--jar_cache_dir={tmp_path}/jars"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert re.search(r"vdgr index: error: the runner could not start: Unable to fetch remote job server jar at "
                     rf"file://\S+/{re.escape(jar)}.*nothing was committed.*--flink_job_server_jar=PATH", err), err
    assert "Traceback" not in err
    assert not (index / "manifest.json").exists() and not (index / "manifests").exists()


def test_dataflow_without_its_beam_extra_is_a_clear_error(tmp_path, capsys):
    try:
        from apache_beam.runners.dataflow.internal import apiclient  # noqa: F401
        pytest.skip("apache-beam[gcp] is installed: a Dataflow run would try to reach Google Cloud")
    except ImportError:
        pass
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    rc = main(["index", corpus, "--embedding", "hashing", "-q", "--index", str(tmp_path / "index"),
               "--preset", "dataflow", "--project=my-project", "--region=europe-west1",
               "--temp_location=gs://my-bucket/tmp", "--staging_location=gs://my-bucket/staging"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "vdgr index: error: the runner could not start: Google Cloud Dataflow runner not available" in err
    assert "Traceback" not in err


def test_presets_fill_only_flags_the_user_did_not_give():
    args = apply_preset("multiprocess", ["--direct_num_workers=8"])
    assert "--direct_num_workers=8" in args and "--direct_num_workers=2" not in args
    assert "--direct_running_mode=multi_processing" in args and "--runner=FnApiRunner" in args
    flink = apply_preset("flink", ["--flink_master=jm:8081"])
    assert "--runner=FlinkRunner" in flink and "--flink_master=jm:8081" in flink
    assert apply_preset("dataflow", ["--runner=FnApiRunner"]).count("--runner=FnApiRunner") == 1
    assert set(PRESETS) == {"auto", "direct", "multiprocess", "flink", "dataflow"}
    assert apply_preset("auto", ["--x=1"]) == ["--x=1"]          # the build chooses (test_auto_runner)
    with pytest.raises(ValueError):
        apply_preset("spark", [])


def test_fewer_full_collections_restores_the_collector():
    import gc

    from runners.index_cli import fewer_full_collections

    before = gc.get_threshold()
    with fewer_full_collections():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[2] >= 100
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_library_notices_on_the_root_logger_do_not_reach_the_user():
    import logging

    from runners.index_cli import _ThirdPartyNotices

    def record(name, level, path):
        return logging.LogRecord(name, level, path, 1, "apitools not found", None, None)

    f = _ThirdPartyNotices()
    assert not f.filter(record("root", logging.WARNING, "/x/site-packages/apache_beam/io/gcp/gcsio.py"))
    assert f.filter(record("root", logging.ERROR, "/x/site-packages/apache_beam/io/gcp/gcsio.py"))
    assert f.filter(record("vdgr.embedding", logging.WARNING, "/x/site-packages/vdgr_core/embedding.py"))
    assert f.filter(record("root", logging.WARNING, "/work/main/runners/cli.py"))


def test_a_job_service_is_watched_past_beams_300_seconds_unless_the_user_bounds_it():
    """Beam puts ``--job_server_timeout`` (300 s) on a portable job's state and message streams,
    so a driver watching a longer job failed with DEADLINE_EXCEEDED while the job went on (the
    100k cluster bench's 1-pool build here). A runner with a job service is watched for
    ``JOB_WATCH_S``; a timeout the user gives is kept; in-process runners get none."""
    from apache_beam.options.pipeline_options import PortableOptions

    from pipelines.options import JOB_WATCH_S, pipeline_options

    def timeout(*args):
        return pipeline_options(list(args)).view_as(PortableOptions).job_server_timeout

    assert timeout("--runner=PortableRunner", "--job_endpoint=localhost:1") == JOB_WATCH_S
    assert timeout("--runner=FlinkRunner") == JOB_WATCH_S
    assert timeout("--runner=PortableRunner", "--job_server_timeout=900") == 900
    assert timeout() == timeout("--runner=FnApiRunner") == 300          # Beam's own default, unused


def test_a_job_endpoint_nothing_answers_at_is_a_clear_error(tmp_path, capsys, monkeypatch):
    """With the watch that long, a wrong ``--job_endpoint`` must not wait as long: the driver
    asks the endpoint first and stops with a typed error (exit 2) when nothing answers."""
    import pipelines.options as options_mod
    from tests.support.cluster import free_port

    monkeypatch.setattr(options_mod, "JOB_CONNECT_S", 1.0)
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index = tmp_path / "index"
    port = free_port()                                     # nothing listens there
    rc = main(["index", corpus, "--embedding", "hashing", "-q", "--index", str(index),
               "--runner=PortableRunner", f"--job_endpoint=localhost:{port}", "--environment_type=LOOPBACK"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"no job service answered at --job_endpoint=localhost:{port} within 1 s" in err, err
    assert "Traceback" not in err
    assert not (index / "manifest.json").exists() and not (index / "manifests").exists()


def test_an_object_store_that_cannot_be_reached_is_a_clear_error(tmp_path, capsys):
    """A gs:// index with no credentials and no network: pyarrow's GCS client retried for its
    default 15 minutes, so the build seemed to hang; now the retry is bounded (60 s, or the
    URI's own ``retry_limit_seconds``, 1 s here) and the failure is a typed error, exit 2."""
    pytest.importorskip("pyarrow._gcsfs")
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    rc = main(["index", corpus, "--embedding", "hashing", "-q",
               "--index", "gs://vdgr-no-such-bucket/idx?retry_limit_seconds=1"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "vdgr index: error: cannot take the writer lock of gs://vdgr-no-such-bucket/idx" in err, err
    assert "Traceback" not in err


def test_object_store_options_are_added_unless_the_uri_names_them():
    from vdgr_core.store.location import GCS_RETRY_LIMIT_S, _with_fs_options

    assert _with_fs_options("gs://b/i") == f"gs://b/i?retry_limit_seconds={GCS_RETRY_LIMIT_S}"
    assert _with_fs_options("gs://b/i?retry_limit_seconds=5") == "gs://b/i?retry_limit_seconds=5"
    assert _with_fs_options("s3://b/i?region=x") == "s3://b/i?region=x&allow_delayed_open=true"
    assert _with_fs_options("file:///tmp/i") == "file:///tmp/i"
