"""TSDAE's objective (Wang, Reimers and Gurevych 2021, eq. 1): reconstruct the sentence from the vector of its
damaged copy.

    s_tilde = delete(s, 0.6);   h = pool(encoder(s_tilde))                          (B, H)
    L = -(1 / |T|) sum over rows i and target positions t of log p_dec(x_{i,t} | x_{i,<t}, h_i)

The decoder reads the original token ids x_i shifted right (teacher forcing: [CLS] x_1 ... predicts x_1 ... [SEP])
under a causal mask, and its cross-attention attends to h_i alone, a memory of length 1, so everything it
knows about the sentence passes through the sentence vector. T is every real target position of the batch (the
[SEP] included, padding excluded); the mean runs over them all (sentence-transformers' cross-entropy with the
padding id ignored).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from sentcl.config.typed import ConfigError
from sentcl.methods.views import SENTENCE_IDS, SENTENCE_MASK, trim_tokens
from sentcl.objectives.base import Objective
from sentcl.objectives.mlm import IGNORE_INDEX

logger = logging.getLogger("sentcl")


def reconstruction_loss(decoder: nn.Module, h: Tensor, ids: Tensor, mask: Tensor) -> Tensor:
    """Mean cross-entropy of the decoder's next-token predictions of ``ids`` (B, L) given the sentence vectors h
    (B, H) as a length-1 memory; ``mask`` (B, L) marks the real tokens."""
    if ids.size(1) < 2:
        raise ValueError(f"tsdae needs rows of at least 2 tokens ([CLS] and [SEP]), got length {ids.size(1)}")
    memory = h.unsqueeze(1)  # (B, H) -> (B, 1, H): the decoder's whole view of the sentence
    memory_mask = torch.ones(h.size(0), 1, dtype=mask.dtype, device=mask.device)  # (B, 1)
    out = decoder(
        input_ids=ids[:, :-1],
        attention_mask=mask[:, :-1],
        encoder_hidden_states=memory,
        encoder_attention_mask=memory_mask,
        use_cache=False,
    )
    logits = out.logits  # (B, L-1, V)
    labels = ids[:, 1:].masked_fill(mask[:, 1:] == 0, IGNORE_INDEX)  # (B, L-1)
    flat = logits.float().reshape(-1, logits.size(-1))  # (B·(L-1), V)
    return F.cross_entropy(flat, labels.reshape(-1), ignore_index=IGNORE_INDEX)


class TSDAELoss(Objective):
    """z (B, 1, D): the damaged sentences' vectors; the metadata holds the original sentences' token ids.
    ``attach`` builds the decoder from the encoder; it trains beside the encoder and is not saved with it.

    The pooling rule: a model that is already a sentence encoder keeps its own pooling (``model.pooler`` null
    on a sentence-transformers or sentcl folder); a raw encoder (``model.pooler`` null on a plain Hugging Face
    folder, which would get [CLS] with SimCSE's MLP head) reads [CLS] without a head, the paper's pooling
    (``pooler_given``: the recipe named a pooler, which is then kept as it is)."""

    num_views = 1

    def __init__(self, name_or_path: str, tie_all: bool = False, pooler_given: bool = False) -> None:
        super().__init__()
        self.name_or_path, self.tie_all, self.pooler_given = name_or_path, tie_all, pooler_given
        self._decoder: tuple[nn.Module, ...] = ()  # not a submodule: the loop trains it as attach's module

    def attach(self, model: nn.Module) -> dict[str, nn.Module]:
        from sentcl.methods.tsdae.decoder import build_decoder

        if getattr(model, "head", None) is not None:
            if self.pooler_given:  # TSDAEOptions.check refuses model.pooler=cls: a head that came otherwise
                raise ConfigError(
                    "tsdae decodes from the pooled vector itself, not through an MLP head: start from a model "
                    "without one, or set model.pooler=cls_before_pooler (the paper's [CLS])"
                )
            # model.pooler null on a raw encoder: the paper's [CLS], without SimCSE's MLP head
            model.pooler, model.head = "cls_before_pooler", None
            logger.info(
                "%s: tsdae reads [CLS] without a head (the paper's pooling of a raw encoder)",
                self.name_or_path,
            )
        hidden = int(model.backbone.config.hidden_size)
        width = int(getattr(model, "full_embedding_dim", hidden))
        if width != hidden:
            raise ConfigError(
                f"tsdae: the sentence vector is {width} wide and the decoder's cross-attention reads "
                f"{hidden}: start from a model without Dense layers after its pooling"
            )
        decoder = build_decoder(model.backbone, self.name_or_path, self.tie_all)
        self._decoder = (decoder,)
        return {"decoder": decoder}

    def forward(self, z: Tensor, **meta: Any) -> dict[str, Tensor]:
        self.check_views(z)
        if not self._decoder:
            raise RuntimeError("TSDAELoss.attach(model) must run before training")
        ids, mask = trim_tokens(meta[SENTENCE_IDS], meta[SENTENCE_MASK])  # (B, L) each
        return {"loss": reconstruction_loss(self._decoder[0], z[:, 0], ids, mask)}
