"""distill_mse and distill_kl against their formulas written out with plain loops and numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentcl.methods.distill_kl.loss import DistillKL
from sentcl.methods.distill_mse.loss import DistillMSE


def rand(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def mse(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over rows and coordinates of the squared difference, by loops."""
    total = sum((a[i, d] - b[i, d]) ** 2 for i in range(a.shape[0]) for d in range(a.shape[1]))
    return total / (a.shape[0] * a.shape[1])


def test_distill_mse_is_the_papers_two_terms_against_the_weighted_teacher_mean():
    z = rand(5, 2, 6)  # (B, V, D): the student's source and translation vectors
    t0, t1 = rand(5, 6, seed=1), rand(5, 6, seed=2)
    loss = DistillMSE([0.75, 0.25], 6, parallel=True)
    out = loss(z, teacher_0=t0, teacher_1=t1)
    target = 0.75 * t0.numpy() + 0.25 * t1.numpy()
    source, translation = mse(z[:, 0].numpy(), target), mse(z[:, 1].numpy(), target)
    assert float(out["loss"]) == pytest.approx(source + translation, rel=1e-10)
    assert float(out["mse_source"]) == pytest.approx(source, rel=1e-10)
    assert float(out["mse_translation"]) == pytest.approx(translation, rel=1e-10)
    one = DistillMSE([1.0], 6)(z[:, :1], teacher_0=t0)
    assert float(one["loss"]) == pytest.approx(mse(z[:, 0].numpy(), t0.numpy()), rel=1e-10)


def nll(positive: float, others: list[float]) -> float:
    return -positive + math.log(math.exp(positive) + sum(math.exp(o) for o in others))


def test_distill_mse_with_simcse_adds_infonce_of_the_two_views_and_keeps_the_mse_on_the_first():
    z, t = rand(5, 2, 6), rand(5, 6, seed=1)
    out = DistillMSE([1.0], 6, simcse_weight=0.5, temperature=0.05)(z, teacher_0=t)
    h, hp = z[:, 0].numpy(), z[:, 1].numpy()
    infonce = np.mean(
        [
            nll(cos(h[i], hp[i]) / 0.05, [cos(h[i], hp[j]) / 0.05 for j in range(5) if j != i])
            for i in range(5)
        ]
    )
    assert float(out["simcse"]) == pytest.approx(infonce, rel=1e-10)
    assert float(out["loss"]) == pytest.approx(mse(h, t.numpy()) + 0.5 * infonce, rel=1e-10)
    assert DistillMSE([1.0], 6, simcse_weight=0.5).num_views == 2 and DistillMSE([1.0], 6).num_views == 1


def test_distill_mse_projection_is_trained_and_maps_the_student_into_the_teacher_space():
    loss = DistillMSE([1.0], teacher_dim=6)
    modules = loss.bind(4)
    assert set(modules) == {"teacher_projection"}
    proj = modules["teacher_projection"].double()
    z, t = rand(5, 1, 4), rand(5, 6, seed=3)
    out = loss(z, teacher_0=t)
    w, b = proj.weight.detach().numpy(), proj.bias.detach().numpy()
    mapped = np.stack([w @ z[i, 0].numpy() + b for i in range(5)])  # W s + b per example
    assert float(out["loss"].detach()) == pytest.approx(mse(mapped, t.numpy()), rel=1e-10)
    out["loss"].backward()
    assert proj.weight.grad is not None and proj.weight.grad.abs().sum() > 0
    assert DistillMSE([1.0], 6).bind(6) == {}, "equal widths need no mapping"


def test_distill_mse_pca_target_is_the_teacher_vectors_on_the_first_principal_axes():
    corpus = rand(200, 6, seed=4) * torch.tensor([5.0, 3.0, 2.0, 1.0, 0.5, 0.1], dtype=torch.float64)
    x = corpus.numpy()
    # reference PCA: the right singular vectors of the centred data, by decreasing singular value
    _, _, vt = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
    basis = torch.from_numpy(np.linalg.eigh(np.cov(x.T, bias=True))[1][:, ::-1].copy())
    loss = DistillMSE([1.0], 6, mapping="pca", pca_basis=basis)
    assert loss.bind(3) == {}
    z, t = rand(4, 1, 3, seed=5), corpus[:4]
    out = loss(z, teacher_0=t)
    reduced = x[:4] @ vt[:3].T  # (4, 3) up to each axis' sign
    signs = np.sign(np.sum(loss.pca.numpy() * vt[:3].T, axis=0))  # align the reference's signs
    assert float(out["loss"]) == pytest.approx(mse(z[:, 0].numpy(), reduced * signs), rel=1e-8)
    with pytest.raises(ValueError, match="student is wider"):
        DistillMSE([1.0], 6, mapping="pca", pca_basis=basis).bind(8)


def kl_by_hand(
    student: np.ndarray, teachers: list[np.ndarray], weights: list[float], tau: float, tau_t: float
):
    n, total = student.shape[0], 0.0
    for i in range(n):
        others = [j for j in range(n) if j != i]
        s = [cos(student[i], student[j]) / tau for j in others]
        t = [
            sum(w * cos(tk[i], tk[j]) for w, tk in zip(weights, teachers, strict=True)) / tau_t
            for j in others
        ]
        zs, zt = sum(math.exp(v) for v in s), sum(math.exp(v) for v in t)
        p = [math.exp(v) / zt for v in t]
        q = [math.exp(v) / zs for v in s]
        total += sum(pj * math.log(pj / qj) for pj, qj in zip(p, q, strict=True))
    return total / n


def test_distill_kl_is_the_row_kl_over_the_other_sentences():
    z = rand(6, 1, 5)
    t0, t1 = rand(6, 8, seed=1), rand(6, 3, seed=2)  # teachers of other widths than the student
    out = DistillKL([0.6, 0.4], temperature=0.5, teacher_temperature=0.25)(z, teacher_0=t0, teacher_1=t1)
    expected = kl_by_hand(z[:, 0].numpy(), [t0.numpy(), t1.numpy()], [0.6, 0.4], 0.5, 0.25)
    assert float(out["loss"]) == pytest.approx(expected, rel=1e-9)


def test_distill_kl_is_zero_when_the_student_ranks_as_the_teacher_and_has_finite_gradients():
    t = rand(6, 5, seed=7)
    z = t.clone().unsqueeze(1).requires_grad_(True)  # (B, 1, D): the student is the teacher
    out = DistillKL([1.0], temperature=0.1, teacher_temperature=0.1)(z, teacher_0=t)
    assert abs(float(out["loss"].detach())) < 1e-12
    moved = (z + 0.3 * rand(6, 1, 5, seed=8)).detach().requires_grad_(True)
    out = DistillKL([1.0], temperature=0.1, teacher_temperature=0.1)(moved, teacher_0=t)
    out["loss"].backward()
    assert float(out["loss"].detach()) > 0 and torch.isfinite(moved.grad).all()


def test_a_missing_teacher_tensor_is_named():
    with pytest.raises(ValueError, match="teacher_1"):
        DistillKL([0.5, 0.5], 0.05, 0.025)(rand(4, 1, 3), teacher_0=rand(4, 3))


def test_distill_kl_of_a_one_sentence_batch_is_zero_not_nan():
    z = rand(1, 1, 5).requires_grad_(True)
    out = DistillKL([1.0], 0.05, 0.025)(z, teacher_0=rand(1, 3))
    out["loss"].backward()
    assert float(out["loss"].detach()) == 0.0 and torch.equal(z.grad, torch.zeros_like(z))
