"""AdamW with the usual no-decay groups, and a linear warm-up + linear decay schedule."""

from __future__ import annotations

import torch
from torch import nn

NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight", "norm.weight")


def build_optimizer(
    model: nn.Module, learning_rate: float, weight_decay: float, fused: bool = False
) -> torch.optim.AdamW:
    """AdamW with weight decay on every weight but biases and LayerNorm; ``fused``: torch's fused kernel."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if any(key in name for key in NO_DECAY) else decay).append(param)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=learning_rate, fused=fused or None)


def linear_schedule(
    optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """lr(t) = peak · t/warmup during warm-up, then peak · (total − t)/(total − warmup), down to 0."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return step / max(1, warmup_steps)
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
