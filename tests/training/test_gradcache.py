"""GradCache equals the uncached computation: loss and every parameter gradient within 1e-5.

With dropout off the reference is the plain step (one forward over the whole batch). With dropout on, the
reference must draw the same masks: it runs the same chunks' forward passes with a graph, in the same
order, from the same seed, then concatenates and backpropagates once — which is what GradCache must equal
if (and only if) each chunk's re-run replays the dropout masks of its no-grad pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.data import MIXED_LENGTH_SENTENCES
from torch import Tensor

from sentcl.data.augment.features import FeatureCutoff
from sentcl.methods import Method, duplicate_view
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.infonce import InfoNCE, info_nce
from sentcl.training.batch_source import make_batch
from sentcl.training.step import embed_views, forward_loss

SENTENCES = MIXED_LENGTH_SENTENCES
B = len(SENTENCES)


def _simcse() -> Method:
    """Unsupervised SimCSE's method: (s, s), InfoNCE at tau = 0.05."""
    return Method(views=duplicate_view(2), objective=InfoNCE(0.05), examples=SENTENCES)


def _model(tiny_bert: Path, dropout: float | None) -> SentenceEncoder:
    torch.manual_seed(0)  # the MLP head's initialisation
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", dropout=dropout)
    model.train()
    return model


def _grads(model: SentenceEncoder) -> dict[str, Tensor]:
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


def _assert_same(a: dict[str, Tensor], b: dict[str, Tensor], atol: float = 1e-5) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=atol, rtol=0, msg=f"gradient of {name}")


def _plain(model: SentenceEncoder, batch: dict[str, Tensor], method: Method) -> tuple[float, dict]:
    z = embed_views(model, batch, method, B)  # (B, V, D)
    loss = method.objective(z.float())["loss"]
    loss.backward()
    return float(loss.detach()), _grads(model)


def _chunked_reference(
    model: SentenceEncoder, batch: dict[str, Tensor], method: Method, chunk: int, bf16: bool = False
) -> tuple[float, dict]:
    """Hand-written: forward chunk after chunk with a graph (each trimmed to its longest row), one backward."""
    views = method.num_views
    parts = []
    for start in range(0, B, chunk):
        stop = min(start + chunk, B)
        rows = {k: v[start * views : stop * views] for k, v in batch.items()}  # (b·V, L)
        keep = int(rows["attention_mask"].sum(1).max())
        rows = {k: v[:, :keep] for k, v in rows.items()}  # (b·V, L_chunk)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            parts.append(embed_views(model, rows, method, stop - start))  # (b, V, D)
    z = torch.cat(parts)  # (B, V, D)
    loss = method.objective(z.float())["loss"]
    loss.backward()
    return float(loss.detach()), _grads(model)


@pytest.mark.parametrize("chunk", [1, 2, 3, B, 100])
def test_no_dropout_equals_plain_step(tiny_bert: Path, chunk: int) -> None:
    model = _model(tiny_bert, dropout=0.0)
    method = _simcse()
    batch = make_batch(SENTENCES, method, model)
    ref_loss, ref_grads = _plain(model, batch, method)
    out = forward_loss(model, batch, method, B, chunk_size=chunk, precision="fp32", device="cpu")
    assert not out["loss"].requires_grad
    assert abs(float(out["loss"]) - ref_loss) < 1e-5
    _assert_same(_grads(model), ref_grads)


@pytest.mark.parametrize("chunk", [2, 3])
def test_dropout_masks_are_replayed(tiny_bert: Path, chunk: int) -> None:
    model = _model(tiny_bert, dropout=None)  # the tiny BERT's own 0.1 dropout
    method = _simcse()
    batch = make_batch(SENTENCES, method, model)
    torch.manual_seed(123)
    ref_loss, ref_grads = _chunked_reference(model, batch, method, chunk)
    after_reference = torch.rand(1)
    torch.manual_seed(123)
    out = forward_loss(model, batch, method, B, chunk_size=chunk, precision="fp32", device="cpu")
    assert abs(float(out["loss"]) - ref_loss) < 1e-5
    _assert_same(_grads(model), ref_grads)
    # the RNG stream continues where the plain chunked forward would have left it
    assert torch.equal(torch.rand(1), after_reference)


def test_dropout_is_really_on(tiny_bert: Path) -> None:
    """Guards the test above: with other masks (another seed) the loss changes, so equality means replay."""
    model = _model(tiny_bert, dropout=None)
    method = _simcse()
    batch = make_batch(SENTENCES, method, model)
    torch.manual_seed(123)
    loss_a, _ = _chunked_reference(model, batch, method, 2)
    torch.manual_seed(124)
    loss_b, _ = _chunked_reference(model, batch, method, 2)
    assert abs(loss_a - loss_b) > 1e-4


def test_gradients_accumulate(tiny_bert: Path) -> None:
    """Like loss.backward(), the step adds to existing .grad (gradient accumulation keeps working)."""
    model = _model(tiny_bert, dropout=0.0)
    method = _simcse()
    batch = make_batch(SENTENCES, method, model)
    _, ref = _plain(model, batch, method)
    forward_loss(model, batch, method, B, chunk_size=2, precision="fp32", device="cpu")
    forward_loss(model, batch, method, B, chunk_size=3, precision="fp32", device="cpu")
    _assert_same(_grads(model), {n: 2 * g for n, g in ref.items()})


def test_shared_dropout_mask_and_three_views(tiny_bert: Path) -> None:
    """A method that encodes only view 0 and reuses it for all V=3 views (the embed_views shortcut)."""

    class ThreeViewInfoNCE(InfoNCE):
        num_views = 3

        def forward(self, z: Tensor, **meta: object) -> dict[str, Tensor]:
            a = info_nce(z[:, 0], z[:, 1], self.temperature)
            b = info_nce(z[:, 0], z[:, 2], self.temperature)
            return {"loss": a + b, "part": a}

    model = _model(tiny_bert, dropout=0.0)
    method = Method(
        views=duplicate_view(3), objective=ThreeViewInfoNCE(0.05), examples=SENTENCES, share_dropout_mask=True
    )
    batch = make_batch(SENTENCES, method, model)
    ref_loss, ref_grads = _plain(model, batch, method)
    out = forward_loss(model, batch, method, B, chunk_size=2, precision="fp32", device="cpu")
    assert set(out) == {"loss", "part"}
    assert abs(float(out["loss"]) - ref_loss) < 1e-5
    _assert_same(_grads(model), ref_grads)


def test_bf16_autocast_matches_chunked_bf16_reference(tiny_bert: Path) -> None:
    model = _model(tiny_bert, dropout=None)
    method = _simcse()
    batch = make_batch(SENTENCES, method, model)
    torch.manual_seed(7)
    ref_loss, ref_grads = _chunked_reference(model, batch, method, 3, bf16=True)
    torch.manual_seed(7)
    out = forward_loss(model, batch, method, B, chunk_size=3, precision="bf16", device="cpu")
    assert abs(float(out["loss"]) - ref_loss) < 1e-5
    _assert_same(_grads(model), ref_grads)


def test_bad_chunk_size_and_row_count(tiny_bert: Path) -> None:
    model = _model(tiny_bert, dropout=0.0)
    method = _simcse()
    batch = make_batch(SENTENCES, method, model)
    with pytest.raises(ValueError, match="chunk size must be positive"):
        forward_loss(model, batch, method, B, chunk_size=0, precision="fp32", device="cpu")
    with pytest.raises(ValueError, match="rows but 6 examples"):
        forward_loss(model, batch, method, B - 1, chunk_size=2, precision="fp32", device="cpu")


def test_method_generators_are_replayed(tiny_bert: Path) -> None:
    """Feature cutoff draws from its own generator: the re-run must see the same cut dimensions."""
    model = _model(tiny_bert, dropout=0.0)
    cutoff = FeatureCutoff(rate=0.3, generator=5)
    method = Method(
        views=duplicate_view(2),
        objective=InfoNCE(0.05),
        examples=SENTENCES,
        embedding_augment=[None, cutoff],
        stochastic=[cutoff],
    )
    batch = make_batch(SENTENCES, method, model)
    cutoff.generator.manual_seed(11)
    ref_loss, ref_grads = _chunked_reference(model, batch, method, 2)
    cutoff.generator.manual_seed(11)
    out = forward_loss(model, batch, method, B, chunk_size=2, precision="fp32", device="cpu")
    assert abs(float(out["loss"]) - ref_loss) < 1e-5
    _assert_same(_grads(model), ref_grads)
    cutoff.generator.manual_seed(12)
    other_loss, _ = _chunked_reference(model, batch, method, 2)
    assert abs(other_loss - ref_loss) > 1e-4  # the cut dimensions matter, so equality above means replay
