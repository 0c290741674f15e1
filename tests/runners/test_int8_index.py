"""An index embedded in int8 (real model): recorded as such, kept by an update, and every stored
vector the one the in-process int8 model computes for its text alone."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.integration


def test_int8_index_is_recorded_kept_by_update_and_reproducible(tmp_path, capsys):
    from runners.cli import main
    from schemas import tables as T
    from schemas.config import EmbeddingConfig
    from vdgr_core.embedding import make_embedder
    from vdgr_core.indexing.rows import content_embedding_text
    from vdgr_core.query import KnowledgeBase
    from vdgr_core.store.manifest import read_manifest
    from vdgr_core.store.reader import IndexReader

    corpus, index = tmp_path / "corpus", str(tmp_path / "index")
    for domain in ("router", "phone"):
        (corpus / domain).mkdir(parents=True)
    (corpus / "router" / "manual.md").write_text(
        "# Router manual\n\n## Reset\n\nHold RESET for 10 seconds until the LED blinks amber.\n\n"
        "## Wi-Fi\n\nOpen Settings > Wireless and enter the network password.\n", encoding="utf-8")
    (corpus / "phone" / "guide.md").write_text("# Phone\n\n## Battery\n\nCharge the battery for two hours before first use.\n",
                                     encoding="utf-8")
    assert main(["index", str(corpus), "--index", index, "--embedding-precision", "int8", "-q"]) == 0
    assert read_manifest(index).embedding_model == "minilm:all-MiniLM-L6-v2:int8:packed1-int8v2"
    with open(corpus / "phone" / "guide.md", "a", encoding="utf-8") as f:
        f.write("\n## Quarantine mode\n\nQuarantine mode isolates the Zephyr-7 gateway from every uplink.\n")
    assert main(["update", str(corpus), "--index", index, "-q"]) == 0       # no precision flag: kept
    assert read_manifest(index).embedding_model == "minilm:all-MiniLM-L6-v2:int8:packed1-int8v2"
    rows = IndexReader(index).arrow(T.CONTENTS).to_pylist()
    assert any("Zephyr-7" in row["text"] for row in rows)
    int8 = make_embedder(EmbeddingConfig(precision="int8"))
    for row in rows:                       # built in one request and updated in another: each alone
        expected = int8.embed([content_embedding_text(row["path"], row["text"])])[0]
        np.testing.assert_array_equal(np.asarray(row["vector"], dtype=np.float32), expected)
    res = KnowledgeBase.open(index).query("What isolates the Zephyr-7 gateway?")
    assert "Zephyr-7" in res.evidence[0].text
