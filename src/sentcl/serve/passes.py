"""One pass of the service's batcher, encoded from the token ids the service already counted.

The service tokenises each input once, on arrival (to count its tokens and check its length). For an encoder
that ``modeling.packed`` computes exactly (a BERT backbone, mean or [CLS] pooling, no prompt), a pass runs
the packed forward on those ids: every per-token layer sees only the real tokens, so a pass of mixed lengths
costs what its tokens cost, and nothing is tokenised twice (an input over the model's length is, once more, to
cut it where ``encode`` cuts). Any other encoder gets the texts through its own ``encode``.

The padding a pass may hold (``pass_padding``): the packed forward pads only inside attention, and there
per group of similar lengths (``modeling.packed``), so its passes are cut by sentences and cells alone and
take more of what waits; a padded pass keeps the padding rule of every ``encode``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np


class Input(NamedTuple):
    """A sentence waiting to be encoded: its text and its token ids as the model reads them (truncated)."""

    text: str
    ids: list[int]


def runs_packed(encoder: Any) -> bool:
    """Whether passes of ``encoder`` run the packed forward on ids (``modeling.packed.supports``)."""
    from sentcl.modeling.packed import supports

    return supports(encoder)


def pass_padding(packed: bool) -> float:
    """The padding a pass may add, as a share of its real tokens: unbounded for the packed forward (its
    attention groups keep the padding rule), else ``encode``'s ``MAX_PADDING``."""
    from sentcl.modeling.batching import MAX_PADDING

    return float("inf") if packed else MAX_PADDING


def encode_ids(encoder: Any, ids: list[list[int]], pad_id: int) -> np.ndarray:
    """The embeddings (N, D) of sentences given as token ids (specials included), by the packed forward:
    the same vectors as ``encoder(...)`` on the padded batch."""
    import torch

    from sentcl.modeling.packed import packed_encode

    width = max(len(row) for row in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)  # (N, L)
    mask = torch.zeros((len(ids), width), dtype=torch.long)  # (N, L)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = torch.as_tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    device = encoder.device
    with torch.inference_mode():
        z = packed_encode(encoder, attention_mask=mask.to(device), input_ids=input_ids.to(device))  # (N, D)
    out = z.float().cpu().numpy()
    bad = ~np.isfinite(out).all(axis=1)  # (N,)
    if bad.any():
        raise ValueError(f"the model gives non-finite embeddings (NaN or inf) for {int(bad.sum())} inputs")
    return out
