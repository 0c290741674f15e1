"""Credentials are masked at index time: no table, shard or cache holds them; owners get a report."""
from __future__ import annotations

import io
import os

import pytest
import tantivy

from pipelines.run_build import run_build
from pipelines.run_update import run_update
from runners.index_cli import print_report
from schemas import tables as T
from schemas.config import BuildConfig, EmbeddingConfig
from vdgr_core.store.reader import IndexReader
from vdgr_core.store.writer import table_digest

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
DB_PASSWORD = "Tr0ub4dor&3"
MARKUP_PASSWORD = "Zq8!vLm3pX"
ENTITY_KEY = "AKIAJ7QWERTYUIOPASDF"
KEY_BODY = "MIIEowIBAAKCAQEA7bq98tJ2kqCXF1o3hcgMmlOn7HeuFC1LkZ4oAm0oW7v3nJ0T"
TITLE_TOKEN = "ghp_R2d2C3poX4wingY5tieZ6falcon7Luke8ABc"
YAML_PASSWORD = "Hunter2Hunter2!"
META_TOKEN = "9f8e7d6c5b4a3f2e1d0c"
SECRETS = [AWS_KEY, AWS_SECRET, DB_PASSWORD, MARKUP_PASSWORD, ENTITY_KEY, KEY_BODY, TITLE_TOKEN, YAML_PASSWORD,
           META_TOKEN]

FILES = {
    "ops/_meta.yaml": f"description: 'Ops runbooks; the vault token: {META_TOKEN}'\n",
    "ops/staging/deploy.md": (
        "---\ntitle: Staging deploy\n---\n# Staging deploy\n\n## Credentials\n\n"
        f"Export AWS_ACCESS_KEY_ID={AWS_KEY} and\nAWS_SECRET_ACCESS_KEY={AWS_SECRET} before the run.\n\n"
        f"The staging database password is {DB_PASSWORD}.\n\n"
        "## Rollout\n\nReleased 2026-11-29 for 4 100 000 RUB; firmware 2.0.1, part SM-G973F.\n"),
    "ops/staging/markup.md": (
        f"# Markup\n\nThe **password**: {MARKUP_PASSWORD} opens the console.\n\n"
        f"## Token {TITLE_TOKEN}\n\nRotate it monthly.\n"),
    "ops/hosts/jump.html": (
        "<html><body><h1>Jump host</h1><p>Key id &#65;KIAJ7QWERTYUIOPASDF is retired.</p>"
        "<h2>Access</h2><p>Ask the on-call engineer.</p></body></html>"),
    "ops/hosts/key.txt": (
        "JUMP HOST KEY\n\nInstall this key:\n\n-----BEGIN RSA PRIVATE KEY-----\n"
        f"{KEY_BODY}\n-----END RSA PRIVATE KEY-----\n\nThen restart the agent.\n"),
    "ops/hosts/broken.md": f"---\npassword: {YAML_PASSWORD}\ntitle: [unclosed\n---\n# Broken\n\ntext\n",
    "docs/guide/clean.md": "# Guide\n\nHold RESET for 10 seconds; the LED blinks amber.\n",
}


def _write(root: str, files: dict) -> str:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return root


def _cfg(corpus, index, **kw):
    return BuildConfig(corpus=corpus, index=index, embedding=EmbeddingConfig(kind="hashing"), **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("secrets")
    corpus = _write(str(root / "corpus"), FILES)
    index = str(root / "index")
    return corpus, index, run_build(_cfg(corpus, index))


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def test_no_table_shard_or_file_of_the_index_holds_a_secret(built):
    _, index, _ = built
    reader = IndexReader(index)
    for name in (*T.TABLES, T.EMBEDDING_CACHE):
        if name not in reader.manifest.table_versions:
            continue
        for row in reader.arrow(name).to_pylist():
            for s in _strings(row):
                assert not any(secret in s for secret in SECRETS), (name, s)
    for folder in reader.manifest.all_shard_folders():     # stored fields (compressed on disk)
        searcher = tantivy.Index.open(os.path.join(index, folder)).searcher()
        hits = searcher.search(tantivy.Query.all_query(), max(1, searcher.num_docs)).hits
        assert hits
        for _, addr in hits:
            for s in _strings(searcher.doc(addr).to_dict()):
                assert not any(secret in s for secret in SECRETS), (folder, s)
    # every byte written under the index (tables, shards, manifest), whatever the encoding
    for folder, _, files in os.walk(index):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read()
            for secret in SECRETS:
                assert secret.encode() not in data, (os.path.join(folder, name), secret)


def test_masked_text_keeps_the_rest_and_names_the_kind(built):
    _, index, _ = built
    texts = " ".join(r["text"] for r in IndexReader(index).arrow(T.CONTENTS).to_pylist())
    assert "AWS_ACCESS_KEY_ID=[REDACTED:aws_access_key]" in texts
    assert "password is [REDACTED:password]" in texts
    assert "[REDACTED:private_key]" in texts and "Then restart the agent." in texts
    assert "Released 2026-11-29 for 4 100 000 RUB; firmware 2.0.1, part SM-G973F." in texts
    ops = next(d for d in IndexReader(index).manifest.domains if d.name == "ops")
    assert ops.description == "Ops runbooks; the vault token: [REDACTED:token]"


def test_findings_table_lists_document_line_and_kind(built):
    _, index, report = built
    rows = IndexReader(index).arrow(T.SECRET_FINDINGS).to_pylist()
    got = sorted((r["path"], r["line"], r["kind"]) for r in rows)
    assert got == [
        ("ops/hosts/jump.html", 0, "aws_access_key"),          # only after the entity was decoded
        ("ops/hosts/key.txt", 5, "private_key"),
        ("ops/staging/deploy.md", 8, "aws_access_key"),
        ("ops/staging/deploy.md", 9, "aws_secret_access_key"),
        ("ops/staging/deploy.md", 11, "password"),
        ("ops/staging/markup.md", 3, "password"),               # "**password**:" is seen after parsing
        ("ops/staging/markup.md", 5, "github_token"),           # in a heading: title, path, directory
    ]
    assert all(len(r["fingerprint"]) == 16 and r["domain"] == "ops" for r in rows)
    assert report.secret_findings == len(rows) == report.rows[T.SECRET_FINDINGS]
    out = io.StringIO()
    print_report(report, out)
    assert f"secrets       {len(rows):>9,d} masked" in out.getvalue()


def test_dead_letter_detail_of_a_document_with_a_secret_is_masked(built):
    _, index, _ = built
    dead = {r["path"]: r for r in IndexReader(index).arrow(T.DEAD_LETTERS).to_pylist()}
    assert dead["ops/hosts/broken.md"]["reason"] == "parse_error"
    assert YAML_PASSWORD not in dead["ops/hosts/broken.md"]["detail"]


def test_update_drops_and_adds_findings_per_document_like_a_rebuild(built, tmp_path):
    corpus, index, _ = built
    live = str(tmp_path / "live")
    import shutil

    shutil.copytree(index, live)
    files = dict(FILES)
    files["ops/staging/deploy.md"] = "# Staging deploy\n\nCredentials live in the vault now.\n"
    files["docs/guide/new.md"] = "# New\n\nThe kiosk PIN page password is Kx9#mQ2vLp7.\n"
    new_corpus = _write(str(tmp_path / "corpus"), files)
    run_update(_cfg(new_corpus, live))
    rows = IndexReader(live).arrow(T.SECRET_FINDINGS).to_pylist()
    paths = sorted({r["path"] for r in rows})
    assert paths == ["docs/guide/new.md", "ops/hosts/jump.html", "ops/hosts/key.txt", "ops/staging/markup.md"]
    fresh = str(tmp_path / "fresh")
    run_build(_cfg(new_corpus, fresh))
    a, b = IndexReader(live), IndexReader(fresh)
    assert {n: table_digest(n, a.arrow(n)) for n in T.TABLES} == {n: table_digest(n, b.arrow(n)) for n in T.TABLES}
