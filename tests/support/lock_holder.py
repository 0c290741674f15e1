"""A process that holds an index's writer lock, for the tests of a second writer."""
from __future__ import annotations

import os
import subprocess
import sys

#: the repository root: the working directory of the test's child processes
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOLDER = """
import sys
from vdgr_core.store.lock import IndexLock
with IndexLock(sys.argv[1], "test-holder"):
    print("held", flush=True)
    sys.stdin.read()
"""


class Holder:
    """A process holding the lock of ``index`` until ``release()`` (or killed)."""

    def __init__(self, index: str):
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, index], cwd=REPO, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout.readline().strip() == "held"

    def release(self) -> None:
        """Let the holder leave the lock and exit."""
        self.proc.stdin.close()
        assert self.proc.wait() == 0

    def kill(self) -> None:
        """Kill the holder (its lock stays behind, as after a crash)."""
        self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
