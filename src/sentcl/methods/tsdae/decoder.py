"""TSDAE's decoder, built from the encoder it trains (Wang, Reimers and Gurevych 2021, Section 3).

The decoder is the start model's causal-LM class (``AutoModelForCausalLM``: BERT's ``BertLMHeadModel``) made a
decoder with cross-attention (``is_decoder``, ``add_cross_attention``). Its transformer layers start as a copy
of the encoder's weights as training starts (the cross-attention layers are new), its input word embeddings are
the encoder's own module and its LM head's output weight is that same matrix (tied), so the decoder's token
loss also trains the encoder's embeddings. The LM head's transform is read from the start checkpoint where it has
one (bert-base-uncased) and is new otherwise (a sentence-transformers export has none). With
``tie_all`` every weight the two share by name is one tensor (sentence-transformers' default).

A start model whose causal-LM class has no cross-attention layers (DistilBERT, MPNet, ...) has no layout to
decode with: ``DecoderLayoutError``, one line.
"""

from __future__ import annotations

import copy
import logging

from torch import nn
from transformers import AutoModelForCausalLM

from sentcl.config.typed import ConfigError
from sentcl.modeling.mlm_head import checkpoint_head_tensors

logger = logging.getLogger("sentcl")


class DecoderLayoutError(ConfigError):
    """The start model cannot be made a decoder that reads the sentence vector through cross-attention."""


def _layout_error(name: str, model_type: str, why: str) -> DecoderLayoutError:
    return DecoderLayoutError(
        f"tsdae: model {name!r} ({model_type}) has no decoder-compatible layout: {why}; start from a BERT-like "
        "model (BERT, RoBERTa, ELECTRA, e.g. all-MiniLM-L6-v2 or bert-base-uncased)"
    )


def build_decoder(backbone: nn.Module, name: str, tie_all: bool = False) -> nn.Module:
    """The decoder of ``backbone`` (the encoder's transformer; ``name``: its start checkpoint)."""
    config = copy.deepcopy(backbone.config)
    model_type = str(getattr(config, "model_type", type(backbone).__name__))
    config.is_decoder, config.add_cross_attention = True, True
    try:
        decoder = AutoModelForCausalLM.from_config(config)
    except ValueError:
        raise _layout_error(name, model_type, "transformers has no causal-LM class for it") from None
    base = decoder.base_model
    missing, _ = base.load_state_dict(backbone.state_dict(), strict=False)
    cross = [k for k in missing if "crossattention" in k]
    if not cross:
        raise _layout_error(name, model_type, "its causal-LM class has no cross-attention layers")
    other = [k for k in missing if "crossattention" not in k]
    if other:
        raise _layout_error(
            name, model_type, f"its decoder needs weights the encoder lacks ({other[0]}, ...)"
        )
    decoder.set_input_embeddings(backbone.get_input_embeddings())  # one embedding module, the encoder's
    output = decoder.get_output_embeddings()
    if output is None:
        raise _layout_error(name, model_type, "its causal-LM class has no output embeddings to tie")
    output.weight = backbone.get_input_embeddings().weight  # the LM head's (V, H) weight: the same matrix
    if tie_all:
        shared = dict(backbone.named_parameters())
        for key, _ in list(base.named_parameters()):
            if key in shared:
                parent, _, leaf = key.rpartition(".")
                setattr(base.get_submodule(parent), leaf, shared[key])
    _read_head(decoder, name)
    return decoder.to(next(backbone.parameters()).device)


def _read_head(decoder: nn.Module, name: str) -> None:
    """The LM head's weights from the start checkpoint where it has them (its tied output weight excepted)."""
    prefix = decoder.base_model_prefix
    heads = {child for child, _ in decoder.named_children() if child != prefix}
    own = decoder.state_dict()
    tied = {k for k, v in own.items() if v.data_ptr() == decoder.get_output_embeddings().weight.data_ptr()}
    try:
        found = checkpoint_head_tensors(name, heads)
    except ValueError:  # no weights file to read (a hub id not in the cache): the head starts new
        found = {}
    usable = {k: v for k, v in found.items() if k in own and k not in tied and v.shape == own[k].shape}
    decoder.load_state_dict(usable, strict=False)
    logger.info(
        "%s: tsdae decoder LM head %s",
        name,
        "read from the checkpoint" if usable else "new (none in the checkpoint)",
    )
