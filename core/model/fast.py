"""Faster inference copies of a model: int8 dynamic quantization of the Linear layers, or bf16.

Both are approximations of the fp32 model: `tt translate --quantize` offers them where BLEU on the
held-out set stays within 0.3 of fp32 (tests/test_quantize.py; bench/bench_ct2.py measures speed).
The fp32 model is left as it is; a converted copy is returned.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn

MODES = ("int8", "bf16")


def fast_model(model: nn.Module, mode: str) -> nn.Module:
    """A copy of `model` (eval mode) for inference: mode "int8" or "bf16"."""
    if mode not in MODES:
        raise ValueError(f"quantize mode must be one of {', '.join(MODES)}, got {mode!r}")
    fast = copy.deepcopy(model).eval()
    if mode == "bf16":
        return fast.to(torch.bfloat16)
    # Weights to int8; activations quantized on the fly per batch (dynamic). torch.ao announces its
    # move to torchao with warnings on every call; the API still works, and stderr is the user's.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(fast, {nn.Linear}, dtype=torch.qint8)
