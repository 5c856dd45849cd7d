"""bfloat16 on the CPU only where the CPU computes it: AVX512-BF16 or AMX.

Why: PyTorch's bf16 autocast runs on any x86 CPU, but without bf16 units it emulates the
matrix products, and ran 5.5x slower than float32 on an AVX2-only machine (the stance trunk's
lower layers over 128 perspectives: 2.8 texts/s against 15.4, the states within 0.6 % of each
other); the index build spent half an hour on it. `PERSPECT_BF16=1` or `0` overrides the check.
"""

from __future__ import annotations

import functools
import os
import platform


@functools.cache
def cpu_has_bf16() -> bool:
    """Whether this CPU has bf16 matrix units (read from /proc/cpuinfo's flags on Linux)."""
    forced = os.environ.get("PERSPECT_BF16")
    if forced in ("0", "1"):
        return forced == "1"
    if platform.system() != "Linux":
        return False
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = {w for line in f if line.startswith("flags") for w in line.split()}
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def cpu_autocast():
    """`torch.autocast` to bf16 where the CPU has bf16 units, else a no-op (float32)."""
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_has_bf16())


def cpu_dtype():
    """The dtype states are fed in to match `cpu_autocast` (bf16 or float32)."""
    import torch

    return torch.bfloat16 if cpu_has_bf16() else torch.float32
