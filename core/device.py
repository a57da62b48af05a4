"""Where the model runs and in what precision: one choice for training, translating and inspecting."""

from __future__ import annotations

import functools
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


def resolve_precision(device: torch.device, precision: str) -> str:
    """`auto` -> bf16 where `device` computes it natively, else fp32; fp32/bf16/fp16 are checked and kept.

    bf16 autocast trains ~1.9x faster than fp32 on a CPU with AVX512-BF16 (bench/README.md) and
    is what the shipped model was trained with; without native bf16 it is emulated, and slower.
    """
    if precision == "auto":
        return "bf16" if native_bf16(device) else "fp32"
    if precision not in ("fp32", "bf16", "fp16"):
        raise ConfigError(f"unknown precision {precision!r}; use auto, fp32, bf16 or fp16")
    if precision == "fp16" and device.type != "cuda":
        raise ConfigError("fp16 needs a CUDA GPU; on CPU use --precision bf16")
    return precision


def native_bf16(device: torch.device) -> bool:
    """Whether `device` has bf16 arithmetic in hardware (not emulated)."""
    if device.type == "cuda":
        try:
            return torch.cuda.is_bf16_supported(including_emulation=False)
        except TypeError:  # an older torch, without the argument
            return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        # x86 only: AVX512-BF16 (Cooper Lake, Zen 4 and later) or AMX (Sapphire Rapids and later).
        # Other CPUs stay fp32 until someone measures bf16 faster there.
        found = cpu_capabilities()
        if not found:  # an older torch
            return bool(getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)())
        return bool(found.get("avx512_bf16") or found.get("amx_bf16"))
    return False  # mps: bf16 autocast support varies by macOS version


@functools.cache
def cpu_capabilities() -> dict[str, object]:
    """The CPU's instruction sets as torch reads them (`torch.cpu.get_capabilities()`: "avx512_bf16", "amx_bf16", …;
    the hardware's, whatever ATEN_CPU_CAPABILITY says), read once a process: native_bf16 and the int8 layers
    (core/model/fast.py, for every weight as a model is built) ask it. {} with a torch that cannot say."""
    capabilities = getattr(torch.cpu, "get_capabilities", None)
    return dict(capabilities()) if capabilities is not None else {}


def autocast_context(device: torch.device, precision: str):
    precision = resolve_precision(device, precision)
    if precision == "fp32":
        return nullcontext()
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


@functools.cache
def _cpuinfo_fields() -> dict[str, str] | None:
    """The first CPU's fields in Linux's /proc/cpuinfo, by exact name ("model" apart from "model name"), read once
    a process; None where there is no such file."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the first CPU's block ends at the first blank line
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        return None
    return fields


def _cpuinfo(field: str) -> str | None:
    """A field of Linux's /proc/cpuinfo (the first CPU's), "" where it has none, None where there is no such file."""
    fields = _cpuinfo_fields()
    return None if fields is None else fields.get(field, "")


def cpu_flags() -> str:
    """The CPU's instruction-set flags as Linux's /proc/cpuinfo lists them ("" elsewhere): what a library compiled
    for this CPU (core/model/native) is compiled for."""
    return _cpuinfo("flags") or ""


@functools.cache
def cpu_vendor() -> str:
    """The CPU's vendor as Linux's /proc/cpuinfo names it ("GenuineIntel", "AuthenticAMD"), or "" elsewhere. Read
    once a process: the int8 layers ask it for every small weight as a model is built (core/model/fast.py)."""
    return _cpuinfo("vendor_id") or ""


def describe_cpu() -> str:
    """ "AMD EPYC (family 25 model 17), 2 cores, PyTorch kernels AVX512, native bf16": the CPU a timing or a
    learning curve was taken on.

    The family and model tell CPUs of one name apart (a Zen 3 and a Zen 4 EPYC both read "AMD EPYC"). The
    instruction set is what PyTorch's kernels were chosen for (ATEN_CPU_CAPABILITY may lower it)."""
    name = _cpuinfo("model name")
    if name is None:
        import platform

        name = platform.processor()
    name = name or "unknown CPU"
    family = _cpuinfo("cpu family")
    model = _cpuinfo("model")
    if family and model:
        name = f"{name} (family {family} model {model})"
    isa = torch.backends.cpu.get_cpu_capability()
    bf16 = ", native bf16" if native_bf16(torch.device("cpu")) else ""
    return f"{name}, {os.cpu_count()} cores, PyTorch kernels {isa}{bf16}"
