"""GradCache + Matryoshka gives the plain step's loss and gradients (dropout off), within 1e-5."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.data import MIXED_LENGTH_SENTENCES

from sentcl.methods import Method, duplicate_view
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.infonce import InfoNCE
from sentcl.objectives.matryoshka import Matryoshka
from sentcl.training.batch_source import make_batch
from sentcl.training.step import embed_views, forward_loss

SENTENCES = MIXED_LENGTH_SENTENCES[:6]


def _grads(model: SentenceEncoder) -> dict[str, torch.Tensor]:
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


@pytest.mark.parametrize("chunk", [1, 4])
def test_gradcache_matryoshka_equals_plain_step(tiny_bert: Path, chunk: int) -> None:
    torch.manual_seed(0)
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", dropout=0.0)
    model.train()
    method = Method(
        views=duplicate_view(2), objective=Matryoshka(InfoNCE(0.05), [32, 16, 8]), examples=SENTENCES
    )
    batch = make_batch(SENTENCES, method, model)
    z = embed_views(model, batch, method, len(SENTENCES))  # (B, 2, 32)
    ref = method.objective(z.float())
    ref["loss"].backward()
    ref_grads = _grads(model)
    # the prefixes really add something: the full-width loss alone differs
    assert abs(float(ref["loss"].detach()) - float(ref["loss_dim32"])) > 1e-3

    out = forward_loss(model, batch, method, len(SENTENCES), chunk_size=chunk, precision="fp32", device="cpu")
    assert abs(float(out["loss"]) - float(ref["loss"].detach())) < 1e-5
    grads = _grads(model)
    assert grads.keys() == ref_grads.keys()
    for name in grads:
        torch.testing.assert_close(grads[name], ref_grads[name], atol=1e-5, rtol=0, msg=name)
