"""The learning-rate schedule, AdamW's no-decay groups and the precision handling, against hand-computed values."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import BertModel

from sentcl.training.optim import build_optimizer, linear_schedule
from sentcl.training.precision import DTYPES, autocast, check_precision, grad_scaler


def _lrs(peak: float, warmup: int, total: int, steps: int) -> list[float]:
    """The learning rate in force at steps 0..steps-1 (before each optimizer step)."""
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=peak)
    scheduler = linear_schedule(optimizer, warmup, total)
    out = []
    for _ in range(steps):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


def test_warmup_then_linear_decay_at_chosen_steps() -> None:
    # peak 1e-3, 4 warm-up steps, 12 in all: t/4 · peak up to t = 4, then (12 - t)/8 · peak, down to 0
    lrs = _lrs(1e-3, 4, 12, 14)
    expected = {
        0: 0.0,
        1: 0.25e-3,
        2: 0.5e-3,
        3: 0.75e-3,
        4: 1e-3,
        5: 0.875e-3,
        8: 0.5e-3,
        11: 0.125e-3,
        12: 0.0,
    }
    for step, value in expected.items():
        assert lrs[step] == pytest.approx(value, abs=1e-12), f"step {step}"
    assert lrs[13] == 0.0, "never negative after the last step"


def test_no_warmup_starts_at_the_peak() -> None:
    assert _lrs(2e-5, 0, 5, 5) == pytest.approx([2e-5, 1.6e-5, 1.2e-5, 0.8e-5, 0.4e-5], abs=1e-15)


def test_no_decay_groups_by_parameter_name(tiny_bert: Path) -> None:
    model = BertModel.from_pretrained(str(tiny_bert))
    model.embeddings.word_embeddings.weight.requires_grad_(False)  # frozen: in neither group
    optimizer = build_optimizer(model, 1e-3, 0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    decay, no_decay = optimizer.param_groups
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    decayed = {names[id(p)] for p in decay["params"]}
    excluded = {names[id(p)] for p in no_decay["params"]}
    # by hand: biases and LayerNorm weights excluded, every other trainable weight decayed
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    expected_excluded = {n for n in trainable if n.endswith(".bias") or ".LayerNorm." in n}
    assert excluded == expected_excluded
    assert decayed == trainable - expected_excluded
    assert "encoder.layer.0.attention.self.query.weight" in decayed
    assert "encoder.layer.1.output.LayerNorm.weight" in excluded
    assert "embeddings.LayerNorm.bias" in excluded
    assert "embeddings.word_embeddings.weight" not in decayed | excluded


@pytest.mark.parametrize(("precision", "dtype"), [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_autocast_dtype_on_cpu(precision: str, dtype: torch.dtype) -> None:
    a, b = torch.randn(3, 4), torch.randn(4, 2)
    with autocast(precision, torch.device("cpu")):
        assert (a @ b).dtype == dtype
    assert (a @ b).dtype == torch.float32, "outside the context the weights' precision is back"
    assert {"bf16": torch.bfloat16, "fp16": torch.float16} == DTYPES


def test_grad_scaler_only_for_fp16_on_cuda() -> None:
    for precision in ("fp32", "bf16", "fp16"):
        assert not grad_scaler(precision, torch.device("cpu")).is_enabled()
    if torch.cuda.is_available():
        cuda = torch.device("cuda")
        assert grad_scaler("fp16", cuda).is_enabled()
        assert not grad_scaler("bf16", cuda).is_enabled()
    # a disabled scaler is the identity: the loss and the step are those of the unscaled loop
    loss = torch.tensor(3.5)
    assert grad_scaler("fp32", torch.device("cpu")).scale(loss) is loss


def test_fp16_on_cpu_is_an_error_bf16_is_not() -> None:
    with pytest.raises(ValueError, match="fp16 needs a CUDA device; on the CPU use bf16"):
        check_precision("fp16", torch.device("cpu"))
    check_precision("bf16", torch.device("cpu"))
    check_precision("fp32", torch.device("cpu"))
