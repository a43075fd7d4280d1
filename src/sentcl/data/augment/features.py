"""Feature-level augmentations on token embeddings ``inputs_embeds (N, L, H)`` (ConSERT).

They act on the word embeddings that ``SentenceEncoder.forward(inputs_embeds=..., attention_mask=...)``
accepts in place of ``input_ids`` (see :func:`input_embeddings`); the backbone then adds position and
token-type embeddings itself. ConSERT cuts off after its full embedding layer; cutting the word embeddings
differs only in that position/type information survives in the zeroed entries.

Counts follow the token-level rule, c = clamp(round_half_up(rate * n), 1 if rate > 0, n).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from sentcl.data.augment.tokens import (
    as_generator,
    change_counts,
    check_rate,
    select_random,
)
from sentcl.registry import Registry

FEATURE_AUGMENTATIONS: Registry[nn.Module] = Registry("feature augmentation")


def input_embeddings(backbone: nn.Module, input_ids: Tensor) -> Tensor:
    """The backbone's word embeddings of ``input_ids``: (N, L) -> (N, L, H), to pass as ``inputs_embeds``."""
    embed = backbone.get_input_embeddings()  # type: ignore[operator]
    return embed(input_ids)  # (N, L, H)


def _check_embeds(inputs_embeds: Tensor) -> None:
    if inputs_embeds.dim() != 3:
        raise ValueError(f"inputs_embeds must be (N, L, H), got {tuple(inputs_embeds.shape)}")


@FEATURE_AUGMENTATIONS.register("feature_cutoff")
class FeatureCutoff(nn.Module):
    """Feature cutoff (ConSERT): per sentence, zero c = round_half_up(rate H) random hidden dims at all tokens.

    x'_{i,t,h} = x_{i,t,h} * (1 - m_{i,h}), with m_i in {0,1}^H holding exactly c ones, drawn per sentence.
    """

    def __init__(self, rate: float = 0.2, generator: torch.Generator | int | None = None) -> None:
        super().__init__()
        self.rate = check_rate(rate)
        self.generator = as_generator(generator)

    def forward(self, inputs_embeds: Tensor) -> Tensor:
        _check_embeds(inputs_embeds)
        n, _, hidden = inputs_embeds.shape
        every_dim = torch.ones(n, hidden, dtype=torch.bool, device=inputs_embeds.device)  # (N, H)
        counts = change_counts(self.rate, every_dim.sum(dim=1))  # (N,)
        dims = select_random(every_dim, counts, self.generator)  # (N, H)
        return inputs_embeds.masked_fill(dims[:, None, :], 0.0)  # (N, L, H)
