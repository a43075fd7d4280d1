"""The two positive views of the label-free measures, built from the unlabelled sentences alone.

* The model's own dropout (Gao, Yao and Chen, 2021, "SimCSE: Simple Contrastive Learning of Sentence
  Embeddings"): the same sentence encoded twice with the dropout layers active and everything else in inference
  mode (no training-only head), under a fixed seed, the process's RNG streams left as they were.
* A word-deletion copy: ``sentcl.data.augment.WordDeletion`` at ``DELETION_RATE`` under a fixed seed (the
  token-deletion view of SimCSE's Table 1 and of Wang, Reimers and Gurevych, 2021, "TSDAE", on whitespace words;
  our reading of "token" as the word, so the view is the same for every tokenizer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from sentcl.data.augment.text import WordDeletion
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.evaluation.embedding import before_normalisation
from sentcl.modeling.batching import length_sorted_batches
from sentcl.rng import preserved_rng

DELETION_RATE = 0.1
VIEW_SEED = 0


def deletion_view(sentences: Sequence[str], rate: float = DELETION_RATE, seed: int = VIEW_SEED) -> list[str]:
    """Each sentence with round(rate · n) of its n words deleted (at least one word kept), seeded."""
    return WordDeletion(rate, seed).batch(sentences)


def dropout_layers(model: Any) -> list[nn.Dropout]:
    """The model's dropout layers with p > 0 (none: the model has no dropout view)."""
    if not isinstance(model, nn.Module):
        return []
    return [m for m in model.modules() if isinstance(m, nn.Dropout) and m.p > 0]


def dropout_passes(
    model: Any, sentences: Sequence[str], batch_size: int = ENCODE_BATCH_SIZE, seed: int = VIEW_SEED
) -> tuple[np.ndarray, np.ndarray] | None:
    """Two (N, D) encodings of ``sentences`` with dropout on, before the output normalisation; None when the
    model has no dropout layer (a static model, an ONNX graph)."""
    layers = dropout_layers(model)
    if not layers or not hasattr(model, "tokenizer"):
        return None
    texts = list(sentences)
    truncate_at = model.max_length
    if model.prompt is not None:
        texts = model.prompt.fill(texts, truncate_at)
    modes = [(m, m.training) for m in model.modules()]  # each module's mode, restored exactly after
    model.eval()
    for layer in layers:
        layer.train()
    try:
        with preserved_rng(), before_normalisation(model), torch.no_grad():
            torch.manual_seed(seed)
            passes = []
            for _ in range(2):
                rows = np.zeros((len(texts), model.embedding_dim), dtype=np.float32)
                _, batches = length_sorted_batches(model.tokenizer, texts, truncate_at, batch_size, "pt")
                for index, batch in batches:
                    batch = {k: v.to(model.device) for k, v in batch.items()}
                    rows[index] = model(**batch).float().cpu().numpy()  # (B, D) into input order
                passes.append(rows)
    finally:
        for module, training in modes:
            module.training = training
    return passes[0], passes[1]
