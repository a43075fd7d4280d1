"""What a saved model folder and its backbone config hold, shared by the encoder and its loaders.

The file names sentcl writes beside a Hugging Face backbone (``sentcl.json``, ``sentcl_head.safetensors``), the
backbone's position limit and its dropout settings. Torch-free; below encoder.py and loading.py.
"""

from __future__ import annotations

from typing import Any

SENTCL_CONFIG = "sentcl.json"
HEAD_WEIGHTS = "sentcl_head.safetensors"
DROPOUT_ATTRS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout")
# model types whose position ids start after the padding index (RoBERTa's offset of pad_token_id + 1)
_PADDING_OFFSET_TYPES = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text"})


def position_limit(config: Any) -> int | None:
    """The most tokens the backbone can take: max_position_embeddings, less RoBERTa's padding offset."""
    positions = getattr(config, "max_position_embeddings", None)
    if not isinstance(positions, int) or positions <= 0:
        return None
    if getattr(config, "model_type", "") in _PADDING_OFFSET_TYPES:
        positions -= (getattr(config, "pad_token_id", None) or 0) + 1
    return positions


def set_dropout(config: Any, rate: float) -> None:
    """Set every dropout rate the config knows (BERT/RoBERTa and DistilBERT spellings)."""
    found = [attr for attr in DROPOUT_ATTRS if hasattr(config, attr)]
    if not found:
        raise ValueError(
            f"model config {type(config).__name__} has no dropout setting ({', '.join(DROPOUT_ATTRS)})"
        )
    for attr in found:
        setattr(config, attr, rate)
