"""Shared settings of the property-based fuzzers (hypothesis).

``VDGR_FUZZ_EXAMPLES`` sets the examples per fuzzer: a small budget in CI (the default), a
large one under ``make fuzz``. Each example runs under a watchdog that turns a hang (an
example still running after ``HANG_S`` seconds, far beyond any real input's cost) into a
failure; it is a hang detector, not a speed check.
"""
from __future__ import annotations

import contextlib
import os
import signal

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("VDGR_FUZZ_EXAMPLES", "40"))
HANG_S = 60

FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much], database=None)


class Hang(Exception):
    """An example ran for ``HANG_S`` seconds."""


@contextlib.contextmanager
def watchdog():
    """Raise :class:`Hang` in the block after ``HANG_S`` seconds (main thread, POSIX)."""
    def _fire(signum, frame):
        raise Hang(f"still running after {HANG_S} s: a hang")

    previous = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def lines_of(fragments: list[str]) -> st.SearchStrategy[str]:
    """Text made of lines that are either format-significant fragments or arbitrary text."""
    line = st.one_of(st.sampled_from(fragments), st.text(max_size=40),
                     st.builds(lambda a, b: a + b, st.sampled_from(fragments), st.text(max_size=20)))
    return st.lists(line, max_size=30).map("\n".join)
