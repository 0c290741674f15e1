"""What this CPU computes natively: the facts that choose the embedding precision.

torch emulates bf16 on a CPU without AVX512-BF16 or AMX, at about a third of its float32 speed
(measured on an AVX2-only EPYC: a 256x384 by 384x1536 product at 2.3 GFLOPS in bf16 against 7.9
in float32), so bf16 pays only where the CPU has one of those. Read from ``/proc/cpuinfo`` (no
torch import: the build decides before any model loads); elsewhere nothing is native.
``VDGR_CPU_FLAGS`` (space-separated) replaces the flags read, to describe another kind of host
(bench/performance/bench_embed.py emulates an AVX2-only one with it and torch's own ISA caps).
"""
from __future__ import annotations

import functools
import os
import platform

#: the vector extensions a benchmark's machine line names, in this order, when present
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
#: any of these means bf16 matrix products run in hardware
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> tuple[str, frozenset]:
    model, flags = None, None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key in ("flags", "Features") and flags is None:   # x86, ARM
                    flags = frozenset(value.split())
                if model is not None and flags is not None:
                    break
    except OSError:
        pass
    if os.environ.get("VDGR_CPU_FLAGS") is not None:
        flags = frozenset(os.environ["VDGR_CPU_FLAGS"].split())
    return model or platform.processor() or platform.machine(), flags or frozenset()


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    return _cpuinfo()[0]


def vector_extensions() -> tuple[str, ...]:
    """The :data:`VECTOR_FLAGS` this CPU has."""
    flags = _cpuinfo()[1]
    return tuple(f for f in VECTOR_FLAGS if f in flags)


def native_bf16() -> bool:
    """True when the CPU multiplies bf16 matrices in hardware (AVX512-BF16 or AMX)."""
    return bool(NATIVE_BF16_FLAGS & _cpuinfo()[1])


def fast_int8() -> bool:
    """True when int8 matrix products run faster than float32: an x86 CPU with AVX2 (fbgemm's
    integer kernels, with or without VNNI). Measured on a Xeon capped to AVX2: a 1024x384 by
    384x1536 product, the row quantization and scaling included, at 189 GOPS in int8 against
    122 GFLOPS in float32 (hand run; oneDNN's ``torch._int_mm`` on an EPYC capped the same way:
    312 GOPS against 170 without them)."""
    return "avx2" in _cpuinfo()[1]


def describe() -> str:
    """One line naming the CPU and its vector extensions, e.g.
    ``Intel(R) Xeon(R) Processor [avx2 avx512f amx_bf16]``."""
    return f"{cpu_model()} [{' '.join(vector_extensions()) or 'no AVX2'}]"


__all__ = ["NATIVE_BF16_FLAGS", "VECTOR_FLAGS", "cpu_model", "describe", "fast_int8", "native_bf16",
           "vector_extensions"]
