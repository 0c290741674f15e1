"""Where a command's memory goes: its output lines and its RSS (anonymous / file-backed) on one
time axis.

    python -m bench.performance.rss_trace [--step-mb 150] -- vdgr update CORPUS --index INDEX

Runs the command, prefixes each output line with the seconds since start, and prints
``RSS anon file`` (MB, from ``/proc/PID/status``) whenever the process's RSS moved by
``--step-mb`` since the last line; the last line is the peak (sampled ``VmHWM``, and the
kernel's ``ru_maxrss`` at exit). File-backed pages
(memory-mapped layouts a process reads) count in RSS but the kernel can drop them; anonymous
memory is what the process holds. Linux only.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time

FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def status_mb(pid: int) -> dict[str, int]:
    """The RSS fields of ``/proc/PID/status`` in MB (empty once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            return {line.split(":")[0]: int(line.split()[1]) // 1024 for line in f if line.startswith(FIELDS)}
    except (FileNotFoundError, ProcessLookupError):
        return {}


def trace(cmd: list[str], step_mb: int = 150, out=sys.stdout) -> int:
    """Run ``cmd``, print its output and RSS moves on one time axis; returns its exit status."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    done = threading.Event()
    peak = {"VmHWM": 0}
    lock = threading.Lock()

    def say(text: str) -> None:
        with lock:
            print(f"{time.perf_counter() - t0:8.1f}s {text}", file=out, flush=True)

    def sample() -> None:
        last = -step_mb
        while not done.is_set():
            st = status_mb(proc.pid)
            if not st:
                break
            peak["VmHWM"] = max(peak["VmHWM"], st.get("VmHWM", 0))
            if abs(st.get("VmRSS", 0) - last) >= step_mb:
                last = st.get("VmRSS", 0)
                say(f"RSS {last} MB (anon {st.get('RssAnon')}, file {st.get('RssFile')})")
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    for line in proc.stdout:
        say("| " + line.rstrip("\n"))
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = rc = os.waitstatus_to_exitcode(status)
    done.set()
    sampler.join()
    peak_mb = max(peak["VmHWM"], usage.ru_maxrss // 1024)        # rusage: the peak even between samples
    say(f"exit {rc}; peak RSS {peak_mb} MB")
    return rc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--step-mb", type=int, default=150, help="print the RSS when it moved by this much")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, after --")
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("give the command after --")
    return trace(cmd, a.step_mb)


if __name__ == "__main__":
    sys.exit(main())
