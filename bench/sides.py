"""The two trainers under comparison, behind one interface: ``step(sentences) -> loss`` and ``encode``.

sentcl runs its real training path (``make_batch`` -> ``embed_views`` -> the method's objective, the
loop's optimizer and schedule); the peer runs sentence-transformers' documented unsupervised SimCSE
recipe: ``MultipleNegativesRankingLoss`` (scale 20 = 1/τ with τ = 0.05) on (s, s) pairs with mean pooling,
stepped the way its ``fit`` does (collate -> loss -> backward -> clip -> AdamW -> schedule).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoConfig

from sentcl.config import TrainConfig, TrainingConfig, from_dict
from sentcl.data.readers import Corpus
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.files.paths import resolve_model_path
from sentcl.methods import build_method
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.training.batch_source import augment_tokens, make_batch
from sentcl.training.optim import build_optimizer, linear_schedule
from sentcl.training.precision import autocast
from sentcl.training.step import embed_views, forward_loss

TEMPERATURE = 0.05
MAX_GRAD_NORM = 1.0
EVAL_MAX_LENGTH = 128  # both sides encode STS with the same truncation (or the model's limit, if lower)


def eval_max_length(model: str) -> int:
    config = AutoConfig.from_pretrained(resolve_model_path(model))
    return min(EVAL_MAX_LENGTH, int(getattr(config, "max_position_embeddings", EVAL_MAX_LENGTH)))


def optimizer_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any) -> None:
    """After the backward pass, as both trainers do: clip the gradient norm, step, schedule, clear."""
    torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)


class SentclSide:
    """sentcl's unsupervised SimCSE step with mean pooling (``pooler=avg``), as the training loop runs it."""

    def __init__(
        self,
        model: str,
        max_length: int,
        learning_rate: float,
        total_steps: int,
        precision: str = "fp32",
        gradcache_chunk: int | None = None,
        compile_model: bool = False,
        fused_adamw: bool = False,
        length_buckets: int | None = None,
        packed_tokens: bool | None = None,
    ) -> None:
        self.device = torch.device("cpu")
        self.precision, self.gradcache_chunk = precision, gradcache_chunk
        # the loop's default unless a mode says otherwise
        self.length_buckets = TrainingConfig().length_buckets if length_buckets is None else length_buckets
        self.packed_tokens = TrainingConfig().packed_tokens if packed_tokens is None else packed_tokens
        self.model = SentenceEncoder.from_pretrained(
            resolve_model_path(model), pooler="avg", train_max_length=max_length
        )
        cfg = from_dict(
            TrainConfig,
            {
                "model": {"name_or_path": model, "pooler": "avg", "max_length": max_length},
                "objective": {"name": "unsup_simcse", "temperature": TEMPERATURE},
            },
        )
        self.method = build_method(cfg, Corpus(Path("bench"), [], {}), self.model.tokenizer)
        self.optimizer = build_optimizer(self.model, learning_rate, 0.0, fused=fused_adamw)
        self.scheduler = linear_schedule(self.optimizer, 0, total_steps)
        self.eval_length = eval_max_length(model)
        self.forward_model: Any = torch.compile(self.model) if compile_model else self.model
        self.model.train()

    def tokenize(self, sentences: Sequence[str]) -> dict[str, torch.Tensor]:
        batch = make_batch(list(sentences), self.method, self.model)
        return augment_tokens(batch, self.method, len(sentences))

    def loss_and_backward(self, sentences: Sequence[str]) -> float:
        return self.batch_loss_and_backward(self.tokenize(sentences), len(sentences))

    def batch_loss_and_backward(self, batch: dict[str, torch.Tensor], n: int) -> float:
        """The model side of a step on an already collated batch of n examples (B·V rows)."""
        if self.gradcache_chunk:
            out = forward_loss(
                self.model,
                batch,
                self.method,
                n,
                chunk_size=self.gradcache_chunk,
                precision=self.precision,
                device=self.device,
            )
            return float(out["loss"])
        with autocast(self.precision, self.device):
            z = embed_views(
                self.forward_model,
                batch,
                self.method,
                n,
                length_buckets=self.length_buckets,
                packed_tokens=self.packed_tokens,
            )  # (B, V, D)
        loss = self.method.objective(z.float())["loss"]
        loss.backward()
        return float(loss.detach())

    def step(self, sentences: Sequence[str]) -> float:
        return self.step_batch(self.tokenize(sentences), len(sentences))

    def step_batch(self, batch: dict[str, torch.Tensor], n: int) -> float:
        loss = self.batch_loss_and_backward(batch, n)
        optimizer_step(self.model, self.optimizer, self.scheduler)
        return loss

    def encode(self, sentences: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE) -> np.ndarray:
        return self.model.encode(list(sentences), batch_size=batch_size, max_length=self.eval_length)  # type: ignore[return-value]


class PeerSide:
    """sentence-transformers: ``SentenceTransformer`` + ``MultipleNegativesRankingLoss`` on (s, s) pairs."""

    def __init__(
        self, model: str, max_length: int, learning_rate: float, total_steps: int, precision: str = "fp32"
    ) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers import get_linear_schedule_with_warmup

        try:  # sentence-transformers >= 6 moved the losses; older releases have only the top-level module
            from sentence_transformers.sentence_transformer import losses
        except ImportError:
            from sentence_transformers import losses

        self.precision = precision
        self.model = SentenceTransformer(resolve_model_path(model), device="cpu")
        self.model.max_seq_length = max_length
        self.eval_length = eval_max_length(model)
        self.loss = losses.MultipleNegativesRankingLoss(self.model, scale=1.0 / TEMPERATURE)
        # as fit() builds them: torch.optim.AdamW (its default, non-fused) over ST's no-decay groups and
        # WarmupLinear; here with sentcl's hyper-parameters (no weight decay, no warm-up) on both sides
        no_decay = ("bias", "LayerNorm.bias", "LayerNorm.weight")
        named = list(self.model.named_parameters())
        groups = [
            {"params": [p for n, p in named if not any(k in n for k in no_decay)], "weight_decay": 0.0},
            {"params": [p for n, p in named if any(k in n for k in no_decay)], "weight_decay": 0.0},
        ]
        self.optimizer = torch.optim.AdamW(groups, lr=learning_rate)
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, 0, total_steps)
        self.model.train()

    def tokenize(self, sentences: Sequence[str]) -> list[dict[str, torch.Tensor]]:
        # what smart_batching_collate does with InputExample(texts=[s, s]): one feature dict per column
        # (``preprocess`` from sentence-transformers 6, ``tokenize`` before)
        tokenize = getattr(self.model, "preprocess", None) or self.model.tokenize
        return [tokenize(list(sentences)), tokenize(list(sentences))]

    def loss_and_backward(self, sentences: Sequence[str]) -> float:
        features = self.tokenize(sentences)
        labels = torch.zeros(len(sentences), dtype=torch.long)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            loss = self.loss(features, labels)
        loss.backward()
        return float(loss.detach())

    def step(self, sentences: Sequence[str]) -> float:
        loss = self.loss_and_backward(sentences)
        optimizer_step(self.model, self.optimizer, self.scheduler)
        return loss

    def encode(self, sentences: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE) -> np.ndarray:
        previous, self.model.max_seq_length = self.model.max_seq_length, self.eval_length
        try:
            return self.model.encode(list(sentences), batch_size=batch_size, convert_to_numpy=True)
        finally:
            self.model.max_seq_length = previous
            self.model.train()


MODES: dict[str, dict[str, Any]] = {
    "sentcl": {"side": "sentcl", "precision": "fp32"},
    "sentcl-padded": {"side": "sentcl", "precision": "fp32", "length_buckets": 0, "packed_tokens": False},
    "sentcl-packed": {"side": "sentcl", "precision": "fp32", "packed_tokens": True},
    "sentcl-bf16": {"side": "sentcl", "precision": "bf16"},
    "sentcl-fused": {"side": "sentcl", "precision": "fp32", "fused_adamw": True},
    "sentcl-compile": {"side": "sentcl", "precision": "fp32", "compile_model": True},
    "st": {"side": "st", "precision": "fp32"},
    "st-bf16": {"side": "st", "precision": "bf16"},
}


BUCKETS_MODE = re.compile(r"sentcl-b(\d+)")  # sentcl-bN: fp32 with training.length_buckets = N


def mode_spec(mode: str) -> dict[str, Any]:
    """A mode's settings: one of MODES, or sentcl-bN (N length buckets)."""
    if mode in MODES:
        return dict(MODES[mode])
    if match := BUCKETS_MODE.fullmatch(mode):
        return {
            "side": "sentcl",
            "precision": "fp32",
            "length_buckets": int(match.group(1)),
            "packed_tokens": False,
        }
    raise ValueError(f"unknown mode {mode!r}; valid: {', '.join(MODES)}, sentcl-bN (N length buckets)")


def build_side(
    mode: str, model: str, max_length: int, learning_rate: float, total_steps: int
) -> SentclSide | PeerSide:
    spec = mode_spec(mode)
    side = spec.pop("side")
    if side == "st":
        return PeerSide(model, max_length, learning_rate, total_steps, **spec)
    return SentclSide(model, max_length, learning_rate, total_steps, **spec)
