"""BERT-flow (Li et al. 2020, "On the Sentence Embeddings from Pre-trained Language Models").

An invertible map z = f(x) from the frozen sentence vectors x (D,) to a latent with a standard Gaussian
prior, trained by maximum likelihood (the encoder is not touched):

    log p(x) = Σ_i log N(z_i; 0, 1) + Σ_steps log|det ∂f_step/∂x|

f is a Glow (Kingma & Dhariwal 2018) on a "1x1 image with D channels": L levels of K steps, each step
actnorm -> invertible 1x1 convolution (here a D x D matrix, LU-parametrised) -> additive coupling
(x_b += NN(x_a), NN = Linear-ReLU-Linear-ReLU-Linear with the last layer zero-initialised); after each level
but the last, half of the channels leave as latent (Glow's multi-scale split). The sentence vector is the
latent z (D,), all parts concatenated in the order they leave.

Defaults: 3 levels, 3 steps, width 32 (the name of the authors' flow configuration, ``l3_d3_w32``, as we
read it), Adam with learning rate 1e-3, batch 32, one epoch over the fit sentences. Differences from the
authors' TensorFlow Glow, which we could not check line by line: the split latent's prior is the standard
Gaussian (Glow learns a conditional Gaussian from the remaining half), there is no squeeze (a 1x1 image
has nothing to squeeze), and the coupling network is dense (a 1x1 convolution is a dense layer).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import Tensor, nn

logger = logging.getLogger("sentcl")

LOG_2PI = math.log(2 * math.pi)


@dataclass(frozen=True)
class FlowConfig:
    dim: int
    levels: int = 3
    depth: int = 3
    width: int = 32

    def to_json(self) -> dict[str, int]:
        return asdict(self)


class ActNorm(nn.Module):
    """y = (x + bias) · exp(log_scale), per channel; data-dependent init: zero mean, unit variance."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(channels))
        self.log_scale = nn.Parameter(torch.zeros(channels))
        self.register_buffer("initialized", torch.tensor(False))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        if self.training and not bool(self.initialized):
            with torch.no_grad():
                self.bias.copy_(-x.mean(dim=0))
                self.log_scale.copy_(-torch.log(x.std(dim=0) + 1e-6))
                self.initialized.fill_(True)
        y = (x + self.bias) * torch.exp(self.log_scale)  # (N, C)
        return y, self.log_scale.sum().expand(x.size(0))

    def inverse(self, y: Tensor) -> Tensor:
        return y * torch.exp(-self.log_scale) - self.bias


class InvertibleLinear(nn.Module):
    """Glow's invertible 1x1 convolution, LU-parametrised: W = P L (U + diag(sign(s) e^{log|s|}))."""

    def __init__(self, channels: int, generator: torch.Generator | None = None) -> None:
        super().__init__()
        q, _ = torch.linalg.qr(torch.randn(channels, channels, generator=generator, dtype=torch.float64))
        p, lower, upper = torch.linalg.lu(q)
        s = torch.diagonal(upper)
        self.register_buffer("perm", p.float())
        self.register_buffer("sign_s", torch.sign(s).float())
        self.register_buffer("lower_mask", torch.tril(torch.ones(channels, channels), -1))
        self.lower = nn.Parameter(lower.float())
        self.upper = nn.Parameter(torch.triu(upper, 1).float())
        self.log_s = nn.Parameter(torch.log(torch.abs(s)).float())

    def weight(self) -> Tensor:
        eye = torch.eye(self.lower_mask.size(0), device=self.lower.device)
        lower = self.lower * self.lower_mask + eye
        upper = self.upper * self.lower_mask.T + eye * (self.sign_s * torch.exp(self.log_s))  # + diag(s)
        return self.perm @ lower @ upper  # (C, C)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return x @ self.weight().T, self.log_s.sum().expand(x.size(0))  # (N, C)

    def inverse(self, y: Tensor) -> Tensor:
        return y @ torch.linalg.inv(self.weight()).T


class AdditiveCoupling(nn.Module):
    """x = [x_a, x_b] -> [x_a, x_b + NN(x_a)]; log|det| = 0."""

    def __init__(self, channels: int, width: int) -> None:
        super().__init__()
        self.split = channels // 2
        self.net = nn.Sequential(
            nn.Linear(self.split, width),
            nn.ReLU(),
            nn.Linear(width, width),
            nn.ReLU(),
            nn.Linear(width, channels - self.split),
        )
        nn.init.zeros_(self.net[-1].weight)  # starts as the identity map (Glow's ZeroConv)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        a, b = x[:, : self.split], x[:, self.split :]
        y = torch.cat([a, b + self.net(a)], dim=1)  # (N, C)
        return y, x.new_zeros(x.size(0))

    def inverse(self, y: Tensor) -> Tensor:
        a, b = y[:, : self.split], y[:, self.split :]
        return torch.cat([a, b - self.net(a)], dim=1)  # (N, C)


class Glow(nn.Module):
    """x (N, D) -> (z (N, D), log|det J| (N,)); ``forward`` of the module returns z alone (inference)."""

    def __init__(self, config: FlowConfig, seed: int = 0) -> None:
        super().__init__()
        self.config = config
        generator = torch.Generator().manual_seed(seed)
        self.levels = nn.ModuleList()
        self.channels: list[int] = []
        channels = config.dim
        for level in range(config.levels):
            if channels < 2:
                raise ValueError(
                    f"a flow of {config.levels} levels needs a larger dimension than {config.dim}"
                )
            steps = nn.ModuleList()
            for _ in range(config.depth):
                steps.extend(
                    [
                        ActNorm(channels),
                        InvertibleLinear(channels, generator),
                        AdditiveCoupling(channels, config.width),
                    ]
                )
            self.levels.append(steps)
            self.channels.append(channels)
            if level < config.levels - 1:
                channels -= channels // 2  # half of the channels leave as latent

    def transform(self, x: Tensor) -> tuple[Tensor, Tensor]:
        logdet = x.new_zeros(x.size(0))
        parts = []
        h = x
        for level, steps in enumerate(self.levels):
            for step in steps:
                h, ld = step(h)
                logdet = logdet + ld
            if level < len(self.levels) - 1:
                out = h.size(1) // 2
                parts.append(h[:, :out])  # (N, out): leaves as latent
                h = h[:, out:]
        z = torch.cat([*parts, h], dim=1)  # (N, D)
        return z, logdet

    def inverse(self, z: Tensor) -> Tensor:
        sizes = [c // 2 for c in self.channels[:-1]]
        parts = list(torch.split(z, [*sizes, z.size(1) - sum(sizes)], dim=1))
        h = parts.pop()
        for level in reversed(range(len(self.levels))):
            if level < len(self.levels) - 1:
                h = torch.cat([parts.pop(), h], dim=1)  # (N, channels of this level)
            for step in reversed(self.levels[level]):
                h = step.inverse(h)
        return h

    def log_likelihood(self, x: Tensor) -> Tensor:
        """log p(x) (N,) under the standard Gaussian prior on z, by the change of variables."""
        z, logdet = self.transform(x)
        prior = -0.5 * (z.pow(2) + LOG_2PI).sum(dim=1)  # (N,)
        return prior + logdet

    def forward(self, x: Tensor) -> Tensor:
        return self.transform(x)[0]


def fit_flow(
    vectors: np.ndarray,
    config: FlowConfig | None = None,
    *,
    epochs: int = 1,
    steps: int | None = None,
    batch_size: int = 32,
    learning_rate: float = 1e-3,
    seed: int = 0,
    log_every: int = 50,
) -> Glow:
    """Train a Glow on ``vectors`` (N, D) by maximum likelihood; ``steps`` overrides ``epochs``."""
    x = torch.as_tensor(np.asarray(vectors), dtype=torch.float32)
    if x.ndim != 2 or x.size(0) < 2:
        raise ValueError(f"a flow needs at least 2 sentence vectors (N, D), got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("the sentence vectors hold NaN or inf; no flow can be fitted")
    if bool(
        (x == x[0]).all()
    ):  # the likelihood of N copies of one point has no maximum: the NLL runs to -inf
        raise ValueError(
            f"the {x.size(0)} sentence vectors are all the same vector (every fit sentence encodes alike): a flow "
            "fits a density, which needs sentences that differ; fit on varied sentences"
        )
    config = config or FlowConfig(dim=x.size(1))
    flow = Glow(config, seed=seed)
    optimizer = torch.optim.Adam(flow.parameters(), lr=learning_rate)
    generator = torch.Generator().manual_seed(seed)
    batch_size = min(batch_size, x.size(0))
    per_epoch = max(x.size(0) // batch_size, 1)
    total = steps if steps is not None else epochs * per_epoch
    flow.train()
    started, order = time.monotonic(), torch.empty(0, dtype=torch.long)
    for step in range(total):
        if step % per_epoch == 0:
            order = torch.randperm(x.size(0), generator=generator)
        batch = x[order[(step % per_epoch) * batch_size : (step % per_epoch + 1) * batch_size]]  # (B, D)
        nll = -flow.log_likelihood(batch).mean() / x.size(1)  # nats per dimension
        value = float(nll.detach())
        if not math.isfinite(value):
            raise ValueError(
                f"the flow diverged at step {step + 1} (NLL {value}); lower --learning-rate, or fit on more "
                "varied sentences (near-identical vectors have no finite maximum likelihood)"
            )
        optimizer.zero_grad()
        nll.backward()
        optimizer.step()
        if (step + 1) % log_every == 0 or step + 1 == total:
            logger.info(
                "flow step %d/%d: NLL %.4f nats/dim (%.0fs)",
                step + 1,
                total,
                value,
                time.monotonic() - started,
            )
    return flow.eval()
