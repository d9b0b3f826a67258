"""Compute precision: fp32, or bf16 / fp16 autocast where the device runs it.

bf16 runs on GPUs that support it and on CPUs with bf16 instructions (AVX-512 BF16 or AMX, through oneDNN);
fp16 on GPUs only. A precision the device cannot run falls back to fp32, with a warning saying so.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext

import torch

log = logging.getLogger(__name__)

PRECISIONS = ("fp32", "bf16", "fp16")


def supported(device: torch.device, precision: str) -> bool:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; one of {PRECISIONS}")
    if precision == "fp32":
        return True
    if device.type == "cuda":
        return precision == "fp16" or torch.cuda.is_bf16_supported()
    return device.type == "cpu" and precision == "bf16" and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())


def effective(device: torch.device, precision: str) -> str:
    """``precision`` if ``device`` runs it, else fp32 (logged)."""
    if supported(device, precision):
        return precision
    log.warning("precision %s is not supported on %s; computing in fp32", precision, device)
    return "fp32"


def autocast(device: torch.device, precision: str):
    """The autocast context of ``precision`` on ``device`` (none for fp32)."""
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16)
