"""How fast training runs: the matmul probe that stands in for a device's peak, and what the record names."""

from __future__ import annotations

import time

import numpy as np
import torch

_PEAK_CACHE: dict[tuple[str, str], float] = {}


def matmul_peak_flops(device: torch.device | str, precision: str = "fp32", seconds: float = 0.5) -> float:
    """Measured FLOP/s of a large square matmul on ``device`` in ``precision`` (cached per process).

    fp32 on CUDA runs with TF32 enabled, as training does. The figure stands in for the
    device's peak when none is given; it is what the chip actually sustains on the
    kind of kernel a transformer spends its time in. On a CPU the time is the process's
    CPU time divided by its thread count when that is shorter than the wall clock, so
    other work on a shared machine does not lower the peak (and inflate the MFU).
    """
    device = torch.device(device)
    key = (str(device), precision)
    if key in _PEAK_CACHE:
        return _PEAK_CACHE[key]
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    n = 8192 if device.type == "cuda" else 1024
    if device.type == "cpu":
        dtype = torch.float32           # the CPU probe measures what fp32 training uses
    g = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=g).to(device, dtype)
    b = torch.randn(n, n, generator=g).to(device, dtype)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(3):
        a @ b
    sync()
    done, t0, c0 = 0, time.perf_counter(), time.process_time()
    while True:
        for _ in range(5):
            a @ b
        done += 5
        sync()
        if time.perf_counter() - t0 >= seconds:
            break
    elapsed = time.perf_counter() - t0
    if device.type == "cpu":
        elapsed = min(elapsed, (time.process_time() - c0) / max(1, torch.get_num_threads()))
    rate = 2.0 * n ** 3 * done / elapsed
    _PEAK_CACHE[key] = rate
    return rate


def _median(values):
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001 - a missing distribution is not an error here
        return None


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    import platform

    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
