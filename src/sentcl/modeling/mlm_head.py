"""A masked-LM head over the encoder's own backbone, for SimCSE's auxiliary MLM loss (lambda · L_mlm)."""

from __future__ import annotations

from torch import nn
from transformers import AutoModelForMaskedLM

from sentcl.modeling.encoder import SentenceEncoder
from sentcl.paths import resolve_model_path


class MLMHeadError(ValueError):
    """The checkpoint has no masked-LM head (and a new one was not allowed), or cannot have one."""


def attach_mlm_head(encoder: SentenceEncoder, name_or_path: str, allow_new_head: bool = False) -> nn.Module:
    """A ``*ForMaskedLM`` model whose base is ``encoder.backbone`` itself (shared weights, one backbone).

    The head's weights come from the checkpoint; a checkpoint without them (e.g. a sentence-transformers
    export) is an error unless ``allow_new_head``, which trains a freshly initialised head.
    """
    path = resolve_model_path(name_or_path)
    try:
        mlm, info = AutoModelForMaskedLM.from_pretrained(
            path, config=encoder.backbone.config, output_loading_info=True
        )
    except (OSError, ValueError) as err:
        raise MLMHeadError(f"model {name_or_path!r} cannot have a masked-LM head: {err}") from err
    prefix = mlm.base_model_prefix
    missing_head = [k for k in info["missing_keys"] if not k.startswith(prefix + ".")]
    if missing_head and not allow_new_head:
        raise MLMHeadError(
            f"checkpoint {name_or_path!r} has no masked-LM head weights (missing: {', '.join(missing_head[:3])}"
            f"{', ...' if len(missing_head) > 3 else ''}); set objective.mlm_new_head=true to train a new head, "
            "or start from a checkpoint that has one (e.g. bert-base-uncased)"
        )
    setattr(mlm, prefix, encoder.backbone)  # the MLM forward now runs through the encoder's own backbone
    output = mlm.get_output_embeddings()
    if output is not None:  # decoder tied to the (shared) word embeddings, as in BERT
        output.weight = encoder.backbone.get_input_embeddings().weight
    return mlm
