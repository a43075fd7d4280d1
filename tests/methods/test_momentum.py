"""ESimCSE's momentum encoder + queue (the Companion): the update formula, the queue order, exact resume."""

from __future__ import annotations

import io

import numpy as np
import torch
from torch import nn

from sentcl.methods.momentum import MomentumQueue
from sentcl.training.companion import Companion


class Toy(nn.Module):
    """Mean of token embeddings -> dropout -> linear: small enough to write out by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(30, 6)
        self.lin = nn.Linear(6, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, input_ids, attention_mask, token_type_ids=None):  # noqa: ANN001, ANN201
        m = attention_mask[..., None].float()  # (N, L, 1)
        return self.lin(self.drop((self.emb(input_ids) * m).sum(1) / m.sum(1)))  # (N, 4)


def by_hand(weights: dict[str, np.ndarray], ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    x = (weights["emb.weight"][ids] * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return x @ weights["lin.weight"].T + weights["lin.bias"]


def flat_batch(step: int, b: int = 3, views: int = 2) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(step)
    ids = torch.randint(1, 30, (b * views, 5), generator=g)  # (B·V, L), example-major
    mask = torch.ones_like(ids)
    mask[:, 4] = 0
    return {"input_ids": ids, "attention_mask": mask}


def train_step(model: nn.Module, opt: torch.optim.Optimizer, mq: MomentumQueue, step: int) -> torch.Tensor:
    batch = flat_batch(step)
    queue = mq.objective_inputs(model, batch, 3)["queue"]
    loss = model(**batch).pow(2).mean() + (queue.sum() * 0 if queue.numel() else 0)
    opt.zero_grad()
    loss.backward()
    opt.step()
    mq.after_step(model)
    return queue


def numpy_weights(module: nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().double().numpy().copy() for k, v in module.state_dict().items()}


def test_momentum_update_queue_and_eval_mode_follow_the_formulas():
    torch.manual_seed(0)
    model = Toy().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    mq = MomentumQueue(momentum=0.995, queue_size=7)
    assert isinstance(mq, Companion)
    theta_m = numpy_weights(model)  # the copy starts at theta
    expected_queue = np.zeros((0, 4))
    for step in range(4):
        batch = flat_batch(step)
        queue = mq.objective_inputs(model, batch, 3)["queue"]
        np.testing.assert_allclose(queue.numpy(), expected_queue, rtol=1e-5, atol=1e-6)
        # this batch's momentum embeddings: view 0 rows (0, 2, 4), no dropout, weights theta_m
        rows = batch["input_ids"].numpy()[0::2], batch["attention_mask"].numpy()[0::2]
        pending = by_hand(theta_m, *rows)
        loss = model(**batch).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        mq.after_step(model)
        theta = numpy_weights(model)
        theta_m = {k: 0.995 * theta_m[k] + 0.005 * theta[k] for k in theta}
        for k, v in mq.encoder.state_dict().items():
            np.testing.assert_allclose(v.double().numpy(), theta_m[k], rtol=1e-6, atol=1e-7)
        expected_queue = np.concatenate([pending, expected_queue])[:7]  # newest first, 7 kept
    assert mq.queue.shape == (7, 4)
    assert not mq.encoder.training and all(not p.requires_grad for p in mq.encoder.parameters())
    assert model.training  # the trained model's mode is untouched


def test_resume_from_the_state_dict_equals_the_uninterrupted_run():
    def run(stop_at: int | None) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        torch.manual_seed(0)
        model = Toy()
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        mq = MomentumQueue(0.9, queue_size=5)
        seen = []
        for step in range(6):
            if (
                stop_at is not None and step == stop_at
            ):  # "kill": save, then rebuild everything from the files
                buf = io.BytesIO()
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "mq": mq.state_dict()}, buf)
                buf.seek(0)
                saved = torch.load(buf, weights_only=True)
                model = Toy()
                model.load_state_dict(saved["model"])
                opt = torch.optim.SGD(model.parameters(), lr=0.5)
                opt.load_state_dict(saved["opt"])
                mq = MomentumQueue(0.9, queue_size=5)
                mq.load_state_dict(saved["mq"])
            torch.manual_seed(100 + step)  # dropout of the trained model
            seen.append(train_step(model, opt, mq, step).clone())
        return seen, mq.state_dict()

    full, full_state = run(None)
    resumed, resumed_state = run(3)
    for a, b in zip(full, resumed, strict=True):
        assert torch.equal(a, b)
    assert full_state.keys() == resumed_state.keys()
    for k in full_state:
        assert torch.equal(full_state[k], resumed_state[k]), k
