"""What a user sees from `vdgr index`, `update` and `query` run as commands: only our own
lines on stderr (no third-party notices), counts pluralised, the recorded embedding reused."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.corpus import write_corpus

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = {
    "hr/leave.md": "# Leave policy\n\n## Annual leave\n\nEmployees get 25 days of annual leave.\n",
    "hr/travel.md": "# Travel policy\n\n## Booking\n\nBook flights through the travel desk.\n",
    "hr/broken.pdf": "not a PDF at all",                   # a dead letter
}


def _vdgr(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run([sys.executable, "-m", "runners.cli", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


_ONE_PLURAL = re.compile(r"(?<![\d,.])1 (?:rows|files|domains|documents|arriving documents|texts)\b")


def _foreign_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("[vdgr] ")]


def test_commands_print_only_their_own_lines(tmp_path):
    corpus = write_corpus(str(tmp_path / "corpus"), FILES)
    index = str(tmp_path / "index")
    built = _vdgr("index", corpus, "--index", index, "--embedding", "hashing", "--embedding-dim", "32")
    assert built.returncode == 0, built.stderr
    assert _foreign_lines(built.stderr) == []
    assert "3 documents in 1 domain " in built.stderr
    assert re.search(r"dead letters\s+1 of 3 files\n", built.stdout), built.stdout
    assert not _ONE_PLURAL.search(built.stdout + built.stderr), built.stdout

    # no --embedding: the query uses the hashing embedder the manifest records
    asked = _vdgr("query", "--index", index, "How many days of annual leave?")
    assert asked.returncode == 0, asked.stderr
    assert "Leave policy" in asked.stdout
    assert asked.stderr.strip() == ""

    with open(os.path.join(corpus, "hr", "leave.md"), "a", encoding="utf-8") as f:
        f.write("\n## Sick leave\n\nReport sick leave within one day.\n")
    updated = _vdgr("update", corpus, "--index", index)
    assert updated.returncode == 0, updated.stderr
    assert _foreign_lines(updated.stderr) == []
    assert "processing 1 arriving document in" in updated.stderr
    assert "touches in 1 domain" in updated.stderr
    assert not _ONE_PLURAL.search(updated.stdout + updated.stderr), updated.stdout
    assert "rows in the index, per table:" in updated.stdout
    assert re.search(r"documents\s+3 rows", updated.stdout), updated.stdout
    # the index's dead letters and the update's own, each named (not "1 of 1 file")
    assert re.search(r"dead letters\s+1 in the index; 0 of the 1 file this update read\n", updated.stdout), \
        updated.stdout
