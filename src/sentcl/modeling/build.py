"""The encoder a training config asks for: one SentenceEncoder, or f and g."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.encoder import SentenceEncoder

if TYPE_CHECKING:  # type-only: modeling does not import the config's floor
    from sentcl.config import ModelConfig


def build_encoder(cfg: ModelConfig) -> SentenceEncoder | DualEncoder:
    def one() -> SentenceEncoder:
        return SentenceEncoder.from_pretrained(
            cfg.name_or_path,
            pooler=cfg.pooler,
            mlp_only_train=cfg.mlp_only_train,
            train_max_length=cfg.max_length,
            dropout=cfg.dropout,
            for_training=True,
            prompt=cfg.prompt_templates,
            prompt_denoise=cfg.prompt_denoise,
        )

    if cfg.two_encoders:
        return DualEncoder(one(), one(), cfg.dual_embedding)
    return one()
