"""How tensors are computed: the precision (fp32, or bf16 / fp16 autocast where the device runs it) and, on a
GPU, the attention kernels.

bf16 runs on GPUs that support it and on CPUs with bf16 instructions (AVX-512 BF16 or AMX, through oneDNN);
fp16 on GPUs only. A precision the device cannot run falls back to fp32, with a warning saying so.

Batches trimmed to their longest text (encoding) or cut into length-homogeneous chunks (training) come in many
shapes. cuDNN's fused attention builds an execution plan for every new shape, which costs more than the
attention itself until every shape has been seen, so on a GPU :func:`attention_kernels` leaves scaled
dot-product attention to the flash and memory-efficient kernels, which take any shape as it comes.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager, nullcontext

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


@contextmanager
def attention_kernels(device: torch.device):
    """Within it, scaled dot-product attention on ``device`` (a GPU) does not use cuDNN's kernels (see the
    module docstring); the previous setting comes back afterwards. Nothing changes on CPU."""
    if device.type != "cuda":
        yield
        return
    previous = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(previous)
