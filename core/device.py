"""Where the model runs and in what precision: one choice for training, translating and inspecting."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

import torch

from core.errors import ConfigError


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"unknown device {name!r}; use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("--device cuda asked for, but no CUDA GPU is available")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError("--device mps asked for, but MPS is not available")
    if device.type == "cuda" and device.index is None:
        # Under torchrun each rank owns the GPU of its local rank; DDP needs the index.
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    return device


def autocast_context(device: torch.device, precision: str):
    if precision == "fp32":
        return nullcontext()
    if precision not in ("bf16", "fp16"):
        raise ConfigError(f"unknown precision {precision!r}; use fp32, bf16 or fp16")
    if precision == "fp16" and device.type != "cuda":
        raise ConfigError("fp16 needs a CUDA GPU; on CPU use --precision bf16")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    if device.type == "cpu":
        return _cpu_autocast(dtype)
    return torch.autocast(device_type=device.type, dtype=dtype)


@contextmanager
def _cpu_autocast(dtype: torch.dtype) -> Iterator[None]:
    """Autocast on the CPU, with SDPA's math backend for attention.

    The fused flash-attention kernel's bf16 backward is slow on the CPU for sentence-length
    sequences; the math backend (matmul + softmax) makes a bf16 training step ~1.3x faster here
    (bench/README.md). The result is the same attention.
    """
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]), torch.autocast(device_type="cpu", dtype=dtype):
        yield
