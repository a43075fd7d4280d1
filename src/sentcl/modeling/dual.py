"""Two encoders f and g (Quick-Thoughts; the SimCSE paper's "two encoders" ablation).

In training, each view goes through the encoder its method names (``Method.view_encoders``, written in the
method's own build.py: f the anchor / "input" encoder, g the "context" encoder). At inference the embedding is
f(s), or [f(s); g(s)] as in Quick-Thoughts.

Saved as f's plain HF folder with g in ``context_encoder/`` beside it; f's ``sentcl.json`` says how to
combine them, so ``open_model`` restores the pair while ``AutoModel`` still loads f alone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor, nn

from sentcl.files.atomic import dumps_strict
from sentcl.modeling.folder_layout import SENTCL_CONFIG
from sentcl.similarity import cosine_matrix, embedding_matrix, unit_rows, wants_unit_rows

if TYPE_CHECKING:
    from sentcl.modeling.encoder import SentenceEncoder

logger = logging.getLogger("sentcl")

CONTEXT_DIR = "context_encoder"
COMBINE = ("f", "concat")


class DualEncoder(nn.Module):
    """f and g with SentenceEncoder's inference API; ``encode`` gives f(s) or [f(s); g(s)]."""

    def __init__(self, f: SentenceEncoder, g: SentenceEncoder, combine: str = "f") -> None:
        super().__init__()
        if combine not in COMBINE:
            raise ValueError(f"unknown dual embedding {combine!r}; valid: {', '.join(COMBINE)}")
        self.f, self.g, self.combine = f, g, combine

    @property
    def tokenizer(self):  # noqa: ANN201 - a PreTrainedTokenizerBase
        return self.f.tokenizer

    @property
    def max_length(self) -> int:
        """Inference truncation (f's)."""
        return self.f.max_length

    @property
    def train_max_length(self) -> int:
        """Training truncation (f's)."""
        return self.f.train_max_length

    @property
    def backbone(self) -> nn.Module:
        """f's transformer (e.g. the one an auxiliary MLM head shares)."""
        return self.f.backbone

    @property
    def embedding_dim(self) -> int:
        return self.f.embedding_dim * (2 if self.combine == "concat" else 1)

    @property
    def device(self) -> torch.device:
        return self.f.device

    def encode(self, sentences: str | Sequence[str], **kwargs) -> np.ndarray | Tensor:  # noqa: ANN003
        to_numpy = kwargs.pop("convert_to_numpy", True)
        normalize = wants_unit_rows(kwargs.pop("normalize", False), kwargs.pop("normalize_embeddings", None))
        f = self.f.encode(sentences, convert_to_numpy=False, **kwargs)
        out = (
            f
            if self.combine == "f"
            else torch.cat([f, self.g.encode(sentences, convert_to_numpy=False, **kwargs)], -1)
        )
        if normalize:
            out = unit_rows(out)
        return out.numpy() if to_numpy else out

    def similarity(
        self, a: str | Sequence[str] | np.ndarray, b: str | Sequence[str] | np.ndarray
    ) -> np.ndarray:
        """Cosine similarity of every a against every b, with this pair's inference embedding."""
        return cosine_matrix(embedding_matrix(self, a), embedding_matrix(self, b)).numpy()

    def save_pretrained(self, path: str | Path) -> None:
        """f's folder with g in context_encoder/; sentence-transformers files only when the embedding is f(s)
        (ST would load f alone, which is not [f(s); g(s)])."""
        path = Path(path)
        self.f.save_pretrained(path, sentence_transformers=self.combine == "f")
        if self.combine != "f":
            logger.warning(
                "%s: no sentence-transformers files written: the embedding [f(s); g(s)] needs both encoders",
                path,
            )
        self.g.save_pretrained(path / CONTEXT_DIR, sentence_transformers=False)
        meta = json.loads((path / SENTCL_CONFIG).read_text(encoding="utf-8"))
        meta["dual"] = {"combine": self.combine, "context_encoder": CONTEXT_DIR}
        (path / SENTCL_CONFIG).write_text(dumps_strict(meta) + "\n", encoding="utf-8")
