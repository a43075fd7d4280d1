"""RankCSE's loss against its terms written out with plain loops: InfoNCE, the Jensen-Shannon consistency,
ListNet (top-one cross-entropy, diagonal left out) and ListMLE (Plackett-Luce likelihood of the teachers' order)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentcl.methods.rankcse.loss import RankCSELoss


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    return [v / sum(e) for v in e]


def terms_by_hand(h, hp, teachers, weights, tau1, tau2, tau3, tau_mle):  # noqa: ANN001, ANN201
    n = len(h)
    s = [[cos(h[i], hp[j]) for j in range(n)] for i in range(n)]
    back = [[cos(hp[i], h[j]) for j in range(n)] for i in range(n)]
    t = [
        [sum(w * cos(tk[i], tk[j]) for w, tk in zip(weights, teachers, strict=True)) / tau2 for j in range(n)]
        for i in range(n)
    ]
    infonce = sum(-math.log(softmax([x / tau1 for x in s[i]])[i]) for i in range(n)) / n
    js = 0.0
    for i in range(n):
        p, q = softmax([x / tau1 for x in s[i]]), softmax([x / tau1 for x in back[i]])
        m = [(a + b) / 2 for a, b in zip(p, q, strict=True)]
        js += 0.5 * sum(a * math.log(a / c) for a, c in zip(p, m, strict=True)) + 0.5 * sum(
            b * math.log(b / c) for b, c in zip(q, m, strict=True)
        )
    js /= n
    listnet = 0.0
    for i in range(n):
        others = [j for j in range(n) if j != i]
        q = softmax([t[i][j] for j in others])
        p = softmax([s[i][j] / tau3 for j in others])
        listnet -= sum(a * math.log(b) for a, b in zip(q, p, strict=True))
    listnet /= n
    listmle = 0.0
    for i in range(n):
        order = sorted(range(n), key=lambda j: -t[i][j])
        scores = [s[i][j] / tau_mle for j in order]
        for m in range(n):
            listmle += math.log(sum(math.exp(x) for x in scores[m:])) - scores[m]
    listmle /= n * n
    return infonce, js, listnet, listmle


@pytest.mark.parametrize("ranking", ["listmle", "listnet", "both"])
def test_rankcse_is_infonce_plus_consistency_plus_the_ranking_terms(ranking: str) -> None:
    z = rand(6, 2, 5)
    t0, t1 = rand(6, 7, seed=1), rand(6, 4, seed=2)
    loss = RankCSELoss([0.33, 0.67], 0.05, 0.05, 0.025, 0.05, ranking, 0.7, 1.3, 0.5)
    out = loss(z, teacher_0=t0, teacher_1=t1)
    infonce, js, listnet, listmle = terms_by_hand(
        z[:, 0].numpy(), z[:, 1].numpy(), [t0.numpy(), t1.numpy()], [0.33, 0.67], 0.05, 0.05, 0.025, 0.05
    )
    assert float(out["infonce"]) == pytest.approx(infonce, rel=1e-9)
    assert float(out["consistency"]) == pytest.approx(js, rel=1e-7, abs=1e-12)
    expected = infonce + 0.5 * js
    if ranking != "listmle":
        assert float(out["listnet"]) == pytest.approx(listnet, rel=1e-9)
        expected += 1.3 * listnet
    if ranking != "listnet":
        assert float(out["listmle"]) == pytest.approx(listmle, rel=1e-9)
        expected += 0.7 * listmle
    assert float(out["loss"].detach()) == pytest.approx(expected, rel=1e-9)


def test_the_teachers_order_is_what_listmle_rewards_and_gradients_are_finite() -> None:
    t = rand(5, 6, seed=3)
    views = torch.stack([t, t], dim=1).requires_grad_(True)  # (B, 2, D): the student ranks as the teacher
    shuffled = torch.stack([t, t[torch.tensor([1, 2, 3, 4, 0])]], dim=1).requires_grad_(True)
    loss = RankCSELoss([1.0], ranking="both", consistency_weight=0.0)
    same, other = loss(views, teacher_0=t), loss(shuffled, teacher_0=t)
    assert float(same["listmle"]) < float(other["listmle"]) and float(same["listnet"]) < float(
        other["listnet"]
    )
    other["loss"].backward()
    assert torch.isfinite(shuffled.grad).all()
    one = loss(rand(1, 2, 6, seed=4), teacher_0=rand(1, 3))  # a one-sentence batch ranks nothing
    assert torch.isfinite(one["loss"]) and float(one["listnet"]) == 0.0
