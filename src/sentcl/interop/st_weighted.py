"""sentence-transformers' reader of the weighted static form (``sentcl.modeling.static_weighted``).

A weighted folder's ``modules.json`` names this class as its first module, so ``SentenceTransformer(folder)``
imports it (sentcl installed) and gets the form itself, not a plain mean of its table; without sentcl the load
fails naming this module. It is sentence-transformers' own ``StaticEmbedding`` (its tokenisation, its
``EmbeddingBag`` of the table, its ``save``) whose ``forward`` computes the weighted mean from the tables beside
the table. Inference only: the weights are tables, not the head that was trained (``sentcl distill-static``
fits it). A local folder only, read by sentcl's own reader (``StaticEncoder``: the same checks as any sentcl
command). Texts of one length are weighed together, so a larger ``batch_size`` than sentence-transformers' 32
encodes faster (``sentcl.modeling.static_weighted.POOL_TEXTS``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from sentcl.files.paths import ModelFolderError
from sentcl.modeling.static import StaticEncoder
from sentcl.modeling.static_tokens import TokenRows
from sentcl.modeling.static_weighted import WeightedMean, save_weighted

try:  # sentence-transformers 6 moved its modules; 3 to 5 keep them in models
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
except ImportError:  # pragma: no cover - the older layout
    from sentence_transformers.models import StaticEmbedding


class WeightedStaticEmbedding(StaticEmbedding):
    """``StaticEmbedding`` with the weighted form's ``forward``; ``weighted`` holds its tables."""

    weighted: WeightedMean

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", **kwargs: Any) -> WeightedStaticEmbedding:  # noqa: ARG003
        folder = Path(model_name_or_path) / subfolder
        if not folder.is_dir():
            raise ModelFolderError(
                f"{model_name_or_path}: a weighted static folder (sentcl) is read from a local folder only"
            )
        found = StaticEncoder(folder)  # sentcl's reader: every file and its agreement with the others checked
        if found.weighted is None:
            raise ModelFolderError(f"{folder}: no weighted form here (a one-table static folder)")
        module = cls(found.rust_tokenizer, embedding_weights=found.table)
        module.weighted = found.weighted
        return module

    def forward(self, features: dict[str, torch.Tensor], **kwargs: Any) -> dict[str, torch.Tensor]:  # noqa: ARG002
        ids, offsets = features["input_ids"], features["offsets"]
        lengths = torch.diff(offsets, append=torch.tensor([len(ids)]))  # (B,)
        rows = TokenRows(ids.numpy().astype(np.int64), lengths.numpy().astype(np.int64))
        features["sentence_embedding"] = torch.from_numpy(self.weighted(rows))  # (B, k')
        return features

    def save(self, output_path: str, *args: Any, **kwargs: Any) -> None:
        super().save(output_path, *args, **kwargs)
        save_weighted(Path(output_path), self.weighted)


__all__ = ["WeightedStaticEmbedding"]
