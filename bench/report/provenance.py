"""The provenance every benchmark report starts with: the command, the date, the commit and the
machine it ran on (``uname -a``, the CPU count, the CPU's model and vector extensions)."""
from __future__ import annotations

import os
import platform
import subprocess
import time

from bench.common import REPO


#: environment variables that cap what the CPU is allowed to run (torch's kernels, oneDNN, MKL,
#: fbgemm, the flags vdgr reads): a run under any of them stands for a smaller host, and says so
CAP_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "FBGEMM_ENABLE_INSTRUCTIONS",
                 "VDGR_CPU_FLAGS")


def machine() -> dict:
    """``uname -a``, the CPU count, and the CPU's model with its vector extensions and torch's
    CPU capability (an AVX2-only host runs bf16 at a third of float32 speed: a figure that moved
    several-fold between hosts is explained here first); ``capped`` names the
    :data:`CAP_VARIABLES` set, when any is."""
    from vdgr_core.cpu import describe

    try:
        uname = subprocess.run(["uname", "-a"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        uname = " ".join(platform.uname())
    try:
        import torch

        capability = torch.backends.cpu.get_cpu_capability()
    except ImportError:
        capability = "no torch"
    out = {"uname": uname, "nproc": os.cpu_count(), "cpu": f"{describe()}, torch {capability}"}
    capped = " ".join(f"{v}={os.environ[v]}" for v in CAP_VARIABLES if os.environ.get(v))
    if capped:
        out["capped"] = capped
    return out


def commit() -> str | None:
    """The checked-out commit (read only), or None outside git."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def stamp(command: str) -> dict:
    """The provenance fields every report starts with: command, date, commit and machine."""
    m = machine()
    return {"command": command, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(),
            "machine": m}
