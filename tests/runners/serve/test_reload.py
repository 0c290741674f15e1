"""A new index build is served without a restart; each request sees exactly one manifest."""
from __future__ import annotations

import re

from tests.runners.serve.conftest import config
from tests.support.live_server import STAFF, serve_index
from tests.support.tiny_index import DOCS, Doc, build_tiny_index

NEW_DOC = Doc("HR_Policies", "Policies", "2024", "Remote Work", (
    ("Home office", ("Employees may work from home two days per week with a Zorbatek laptop.",)),
))


def test_new_build_is_picked_up_and_requests_keep_their_snapshot(tmp_path):
    index = build_tiny_index(str(tmp_path / "index"))
    with serve_index(index, config()) as live:
        q = {"question": "How many days per week may I work from home with a Zorbatek laptop?"}
        status, headers, before = live.request("POST", "/v1/query", q, key=STAFF)
        old_build = headers["x-vdgr-build-id"]
        assert status == 200 and not any("Zorbatek" in e["text"] for e in before["evidence"])
        old = live.holder.current()                 # a request in flight holds this snapshot

        build_tiny_index(index, DOCS + (NEW_DOC,))  # a new build committed in place
        assert live.holder.check() is True          # what the reload thread does every few seconds
        assert live.holder.check() is False

        status, headers, after = live.request("POST", "/v1/query", q, key=STAFF)
        assert status == 200 and headers["x-vdgr-build-id"] != old_build
        assert after["evidence"][0]["path"][-1] == "Home office"
        # the old snapshot still answers from its own manifest only
        r = old.kb.query(q["question"], groups=("staff",))
        assert old.build_id == old_build
        assert not any("Zorbatek" in e.text for e in r.evidence)
        old_ids = {old.kb.data.contents.ids[i] for i in range(len(old.kb.data.contents))}
        assert all(e.chunk_id in old_ids for e in r.evidence)

        _, _, health = live.request("GET", "/healthz")
        assert health["build_id"] == headers["x-vdgr-build-id"] and health["reloads"] == 1
        _, _, metrics = live.request("GET", "/metrics")
        assert re.search(r"vdgr_index_reloads_total 1\.0", metrics)
        assert f'vdgr_index_build_info{{build_id="{old_build}"}}' not in metrics


def test_the_reload_thread_swaps_to_a_new_build_by_itself(tmp_path):
    """The background loop, not a hand-called check(): a committed build is picked up."""
    import threading

    from runners.serve.snapshot import SnapshotHolder, open_snapshot

    index = build_tiny_index(str(tmp_path / "index"))
    holder = SnapshotHolder(index, lambda i, e: open_snapshot(i, config(), e), poll_s=0.05)
    first = holder.current().build_id
    swapped = threading.Event()
    holder.subscribe(lambda snap: swapped.set())
    holder.start()
    try:
        build_tiny_index(index, DOCS + (NEW_DOC,))
        assert swapped.wait(timeout=120), "the reload thread never swapped"
        assert holder.current().build_id != first and holder.reloads == 1
    finally:
        holder.stop()
    assert holder._thread is None
