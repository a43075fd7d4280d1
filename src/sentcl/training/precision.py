"""Device choice and mixed precision: autocast contexts and (fp16 only) gradient scaling."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"training.device={name!r} but CUDA is not available on this machine")
    return device


def check_precision(precision: str, device: torch.device) -> None:
    if precision == "fp16" and device.type != "cuda":
        raise ValueError("training.precision=fp16 needs a CUDA device; on the CPU use bf16")


@contextlib.contextmanager
def autocast(precision: str, device: torch.device) -> Iterator[None]:
    """Forward passes under autocast for bf16/fp16; a no-op for fp32 (weights and optimizer stay fp32)."""
    if precision == "fp32":
        yield
        return
    with torch.autocast(device_type=device.type, dtype=DTYPES[precision]):
        yield


def grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler:
    """Loss scaling for fp16 on CUDA; disabled (identity) otherwise."""
    return torch.amp.GradScaler(device.type, enabled=precision == "fp16" and device.type == "cuda")
