"""One training step's model side: examples -> views -> flat batch -> (B, V, D) embeddings."""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from sentcl.data.collate import collate
from sentcl.methods import Example, Method
from sentcl.modeling.encoder import SentenceEncoder


def make_batch(examples: Sequence[Example], method: Method, model: SentenceEncoder) -> dict[str, Tensor]:
    """Tokenize every view of every example: input_ids (B·V, L), example-major."""
    views = [method.views(example) for example in examples]
    return collate(views, model.tokenizer, model.max_length)


def augment_tokens(batch: dict[str, Tensor], method: Method, num_examples: int) -> dict[str, Tensor]:
    """Apply each view's token augmentation to that view's rows of the flat batch."""
    if not method.token_augment:
        return batch
    num_views = method.num_views
    ids = batch["input_ids"].clone()
    mask = batch["attention_mask"].clone()
    length = ids.size(-1)
    ids_v = ids.view(num_examples, num_views, length)  # (B, V, L)
    mask_v = mask.view(num_examples, num_views, length)  # (B, V, L)
    for v, augment in enumerate(method.token_augment):
        if augment is not None:
            ids_v[:, v], mask_v[:, v] = augment(ids_v[:, v], mask_v[:, v])
    return {**batch, "input_ids": ids, "attention_mask": mask}


def embed_views(
    model: SentenceEncoder, batch: dict[str, Tensor], method: Method, num_examples: int
) -> Tensor:
    """One forward pass over all B·V rows (each row its own dropout mask): returns (B, V, D).

    With ``share_dropout_mask`` only view 0 is encoded and reused for every view, which is exactly
    "the same dropout mask for both views" without a second code path in the model.
    """
    num_views = method.num_views
    if method.share_dropout_mask:
        rows = {k: v.view(num_examples, num_views, -1)[:, 0] for k, v in batch.items()}  # (B, L) each
        z = model(**rows, head_activation=None)  # (B, D)
        return z.unsqueeze(1).expand(-1, num_views, -1)  # (B, V, D)
    z = model(**batch, head_activation=method.head_activation)  # (B·V, D)
    return z.view(num_examples, num_views, z.size(-1))  # (B, V, D)
