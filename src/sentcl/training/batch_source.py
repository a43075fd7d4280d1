"""The data side of a step: the token batch, and the objective's metadata, for given example indices.

``make_batch`` tokenises every view of every example (example-major rows), ``augment_tokens`` applies each
view's token augmentation to its rows; ``BatchSource`` picks the examples of a step and builds both.

The corpus decides where token ids come from: a streaming corpus collates its cached ids (tokenised once, on
disk) when every view is the example's own text; otherwise the method's views (text augmentations included)
are tokenised per batch. Each view's token augmentation applies either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from sentcl import distributed
from sentcl.data.collate import collate
from sentcl.data.readers import Corpus
from sentcl.data.streaming import collate_cached
from sentcl.methods.base import Example, Method

if TYPE_CHECKING:
    from sentcl.training.step import Encoder


def make_batch(examples: Sequence[Example], method: Method, model: Encoder) -> dict[str, Tensor]:
    """Tokenize every view of every example: input_ids (B·V, L), example-major."""
    views = [method.views(example) for example in examples]
    return collate(views, model.tokenizer, model.train_max_length)


def per_view(tensor: Tensor, num_examples: int, num_views: int) -> Tensor:
    """The flat example-major rows (B·V, ...) seen per view."""
    return tensor.view(num_examples, num_views, *tensor.shape[1:])  # (B, V, ...)


def augment_tokens(batch: dict[str, Tensor], method: Method, num_examples: int) -> dict[str, Tensor]:
    """Apply each view's token augmentation to that view's rows of the flat batch."""
    if not method.token_augment:
        return batch
    ids = batch["input_ids"].clone()
    mask = batch["attention_mask"].clone()
    ids_v = per_view(ids, num_examples, method.num_views)  # (B, V, L)
    mask_v = per_view(mask, num_examples, method.num_views)  # (B, V, L)
    for v, augment in enumerate(method.token_augment):
        if augment is not None:
            ids_v[:, v], mask_v[:, v] = augment(ids_v[:, v], mask_v[:, v])
    return {**batch, "input_ids": ids, "attention_mask": mask}


@dataclass
class StepBatch:
    examples: list[Example]
    #: the B·V example-major rows (input_ids, attention_mask, ...: (B·V, L) each), token-augmented, on device
    tokens: dict[str, Tensor]
    #: the objective's keyword tensors, gathered from every process
    meta: dict[str, Tensor]

    @property
    def num_examples(self) -> int:
        return len(self.examples)


class BatchSource:
    """``source(indices)`` -> the StepBatch of ``method.examples[i]`` for i in indices, on ``device``."""

    def __init__(self, corpus: Corpus, method: Method, model: Encoder, device: torch.device) -> None:
        self.method, self.model, self.device = method, model, device
        self.cache = (
            corpus.token_cache(model.tokenizer, model.train_max_length) if method.views_are_copies else None
        )

    def __call__(self, indices: Sequence[int]) -> StepBatch:
        method = self.method
        examples = [method.examples[i] for i in indices]
        if self.cache is not None:
            tokens = collate_cached(self.cache, indices, method.num_views, self.model.tokenizer)  # (B·V, L)
        else:
            tokens = make_batch(examples, method, self.model)  # (B·V, L)
        tokens = augment_tokens(tokens, method, len(examples))
        tokens = {k: v.to(self.device) for k, v in tokens.items()}
        local_meta = method.meta(examples) if method.meta else {}
        meta = {k: distributed.all_gather(v.to(self.device)) for k, v in local_meta.items()}
        return StepBatch(examples, tokens, meta)
