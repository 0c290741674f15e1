"""A small corpus built for real (``vdgr index --embedding hashing``) and served with its
documents (``--corpus``), for the tests of ``GET /v1/documents/{id}`` and the search page.

Markdown with a list and a table, a bookmarked PDF, an ACL-restricted folder (``hr``), a
document with a credential and an empty one (a dead letter). After the build the corpus is
changed under the index: ``moved.md`` becomes a symlink to a copy outside the root (same
bytes), ``changing.md`` is edited and ``gone.md`` deleted. The server's ``corpus`` attribute
names the root.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from runners.cli import main
from schemas.config import EmbeddingConfig, QueryConfig
from tests.support.corpus import write_corpus
from tests.support.documents import pdf_with_outline
from tests.support.live_server import LiveServer, serve_index

ORBIT = ("# Orbit X2 Manual\n\n## Factory reset\n\nTo reset the router:\n\n1. Unplug the cable.\n"
         "2. Hold RESET for 10 seconds.\n3. Wait for the amber LED.\n\n## LED codes\n\n"
         "| LED | Meaning |\n|---|---|\n| Solid green | Online |\n| Amber | Resetting |\n")
PDF = pdf_with_outline()
FILES = {
    "net/_meta.yaml": "description: Networking products\n",
    "net/routers/orbit.md": ORBIT,
    "net/routers/x2.pdf": PDF,
    "net/routers/moved.md": "# Moved\n\n## Mounting\n\nMount the bracket with two screws.\n",
    "net/routers/changing.md": "# Changing\n\n## Cables\n\nUse the grey cable for the uplink.\n",
    "net/routers/gone.md": "# Gone\n\n## Antenna\n\nScrew the antenna on clockwise.\n",
    "net/routers/empty.md": "",                         # a dead letter (no content)
    "net/ops/keys.md": "# Deploy keys\n\n## Access\n\nAWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE deploys the site.\n",
    "hr/_meta.yaml": "acl: [hr]\n",
    "hr/salary.md": "# Salary bands\n\n## Bands\n\nQuorvex band E5 pays 90000 euros.\n",
}


@contextmanager
def serve_corpus(base: str) -> Iterator[LiveServer]:
    """Build the corpus in ``base``, change it as the module docstring says, and serve it."""
    corpus = write_corpus(os.path.join(base, "corpus"), FILES)
    index = os.path.join(base, "index")
    assert main(["index", corpus, "--index", index, "--embedding", "hashing", "-q"]) == 0
    outside = os.path.join(base, "outside.md")
    with open(outside, "w", encoding="utf-8") as f:
        f.write(FILES["net/routers/moved.md"])
    routers = os.path.join(corpus, "net", "routers")
    os.remove(os.path.join(routers, "moved.md"))
    os.symlink(outside, os.path.join(routers, "moved.md"))
    with open(os.path.join(routers, "changing.md"), "a", encoding="utf-8") as f:
        f.write("\nAWS_SECRET=added after the build\n")
    os.remove(os.path.join(routers, "gone.md"))
    config = QueryConfig(embedding=EmbeddingConfig(kind="hashing"), min_confidence=0.0)
    with serve_index(index, config, corpus=corpus) as server:
        server.corpus = corpus
        yield server
