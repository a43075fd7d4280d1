"""CoSENT against its double loop written out by hand; Matryoshka against a hand-written sum over prefixes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentcl.methods.cosent.loss import CoSENT, cosent_loss
from sentcl.objectives.infonce import InfoNCE
from sentcl.objectives.matryoshka import Matryoshka


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _cosent_loop(u: np.ndarray, v: np.ndarray, scores: list[float], lam: float = 20.0) -> float:
    """L = log(1 + Σ over pairs (i,j),(k,l) with s_ij > s_kl of e^{λ(cos_kl − cos_ij)})."""
    cos = [_cos(u[i], v[i]) for i in range(len(u))]
    total = 1.0
    for a in range(len(u)):
        for b in range(len(u)):
            if scores[a] > scores[b]:
                total += math.exp(lam * (cos[b] - cos[a]))
    return math.log(total)


def _views(batch: int, dim: int, seed: int) -> torch.Tensor:
    return torch.randn(batch, 2, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cosent_equals_double_loop(seed: int) -> None:
    z = _views(6, 5, seed) * 0.3  # small cosines differences keep every exp term visible
    scores = [4.2, 0.5, 3.0, 3.0, 5.0, 1.25]  # a tie: (3.0, 3.0) is no term
    got = CoSENT()(z, scores=torch.tensor(scores))["loss"]
    want = _cosent_loop(z[:, 0].numpy(), z[:, 1].numpy(), scores)
    assert float(got) == pytest.approx(want, rel=1e-10)


def test_cosent_scale_and_extremes() -> None:
    z = _views(4, 3, 7)
    scores = torch.tensor([0.0, 1.0, 2.0, 3.0])
    u, v = z[:, 0].numpy(), z[:, 1].numpy()
    assert float(cosent_loss(z[:, 0], z[:, 1], scores, scale=5.0)) == pytest.approx(
        _cosent_loop(u, v, scores.tolist(), lam=5.0), rel=1e-10
    )
    # all scores equal: no ordered pair, L = log(1) = 0 (still a tensor with a graph)
    flat = z.clone().requires_grad_(True)
    loss = CoSENT()(flat, scores=torch.ones(4))["loss"]
    assert float(loss.detach()) == 0.0 and loss.requires_grad
    # a huge violation stays finite (logsumexp, not log(1 + sum(exp)))
    big = cosent_loss(z[:, 0], z[:, 1], scores, scale=1e4)
    assert torch.isfinite(big)


def test_cosent_depends_only_on_the_order_of_scores() -> None:
    z = _views(5, 4, 3)
    a = CoSENT()(z, scores=torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0]))["loss"]
    b = CoSENT()(z, scores=torch.tensor([0.1, 0.2, 0.5, 0.9, 1.0]))["loss"]
    assert float(a) == pytest.approx(float(b), rel=1e-12)


def test_cosent_rejects_missing_scores() -> None:
    with pytest.raises(ValueError, match="scores"):
        CoSENT()(_views(3, 4, 0))
    with pytest.raises(ValueError, match="scores must be shaped"):
        CoSENT()(_views(3, 4, 0), scores=torch.ones(2))


def _infonce_loop(anchors: np.ndarray, positives: np.ndarray, tau: float) -> float:
    losses = []
    for i in range(len(anchors)):
        logits = [_cos(anchors[i], positives[j]) / tau for j in range(len(positives))]
        losses.append(-(logits[i] - math.log(sum(math.exp(x) for x in logits))))
    return sum(losses) / len(losses)


def test_matryoshka_equals_sum_over_prefixes_infonce() -> None:
    z = _views(5, 12, 4)
    dims = [12, 8, 4, 2]
    got = Matryoshka(InfoNCE(0.05), dims)(z)
    want = 0.0
    for d in dims:
        a, p = z[:, 0, :d].numpy(), z[:, 1, :d].numpy()
        term = _infonce_loop(a, p, 0.05)  # cosine: the prefix's re-normalisation changes nothing
        want += term
        assert float(got[f"loss_dim{d}"]) == pytest.approx(term, rel=1e-10)
    assert float(got["loss"]) == pytest.approx(want, rel=1e-10)


def test_matryoshka_weights_and_cosent_meta() -> None:
    z = _views(6, 10, 5)
    scores = torch.tensor([1.0, 2.0, 0.0, 5.0, 3.0, 4.0])
    got = Matryoshka(CoSENT(), [10, 3], weights=[1.0, 0.5])(z, scores=scores)["loss"]
    want = _cosent_loop(z[:, 0].numpy(), z[:, 1].numpy(), scores.tolist()) + 0.5 * _cosent_loop(
        z[:, 0, :3].numpy(), z[:, 1, :3].numpy(), scores.tolist()
    )
    assert float(got) == pytest.approx(want, rel=1e-10)


def test_matryoshka_renormalises_each_prefix_for_dot_objectives() -> None:
    """With a dot-product inner objective the prefix is normalised first: the hand-written loop on unit rows."""
    z = _views(4, 6, 9)
    got = Matryoshka(InfoNCE(1.0, similarity="dot"), [6, 3])(z)["loss"]
    want = 0.0
    for d in (6, 3):
        a, p = z[:, 0, :d].numpy(), z[:, 1, :d].numpy()
        a, p = a / np.linalg.norm(a, axis=1, keepdims=True), p / np.linalg.norm(p, axis=1, keepdims=True)
        logits = a @ p.T  # (B, B)
        want += float(np.mean([-(logits[i, i] - np.log(np.exp(logits[i]).sum())) for i in range(4)]))
    assert float(got) == pytest.approx(want, rel=1e-10)
    plain = Matryoshka(InfoNCE(1.0, similarity="dot"), [6], normalize=False)(z)["loss"]
    assert float(plain) == pytest.approx(float(InfoNCE(1.0, similarity="dot")(z)["loss"]), rel=1e-12)


@pytest.mark.parametrize(
    ("dims", "match"),
    [([16, 8], "exceeds the embedding size 12"), ([8, 8], "twice"), ([0, 4], "positive"), ([], "at least")],
)
def test_matryoshka_rejects_bad_dims(dims: list[int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Matryoshka(InfoNCE(0.05), dims)(_views(3, 12, 0))


def test_matryoshka_keeps_the_inner_views() -> None:
    from sentcl.objectives.supervised import SupervisedInfoNCE

    inner = SupervisedInfoNCE(0.05)
    assert Matryoshka(inner, [4]).num_views == inner.num_views == 3


def test_matryoshka_cuts_embedding_meta_to_the_prefix() -> None:
    """An inner objective's ``embedding_meta`` (e.g. a queue (Q, D)) is cut and normalised with z."""
    seen: list[tuple[int, int]] = []

    class QueueObjective(InfoNCE):
        embedding_meta = ("queue",)

        def forward(self, z: torch.Tensor, **meta: torch.Tensor) -> dict[str, torch.Tensor]:
            queue = meta["queue"]
            seen.append((z.size(-1), queue.size(-1)))
            assert torch.allclose(queue.norm(dim=-1), torch.ones(queue.size(0), dtype=queue.dtype))
            return {"loss": (z[:, 0] @ queue.T).sum()}

    z, queue = _views(3, 8, 1), torch.randn(5, 8, dtype=torch.float64)
    got = Matryoshka(QueueObjective(), [8, 4])(z, queue=queue)["loss"]
    assert seen == [(8, 8), (4, 4)]
    want = sum(float((_unit(z[:, 0, :d]) @ _unit(queue[:, :d]).T).sum()) for d in (8, 4))
    assert float(got) == pytest.approx(want, rel=1e-10)


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)
