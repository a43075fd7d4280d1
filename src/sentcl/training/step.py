"""One training step's model side: examples -> views -> flat batch -> (B, V, D) embeddings (+ MLM loss)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from sentcl.data.augment.features import input_embeddings
from sentcl.data.augment.tokens import SpecialIds, real_token_mask
from sentcl.data.collate import collate
from sentcl.methods import Example, Method
from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.mlm import mask_tokens, mlm_loss

Encoder = SentenceEncoder | DualEncoder


def make_batch(examples: Sequence[Example], method: Method, model: Encoder) -> dict[str, Tensor]:
    """Tokenize every view of every example: input_ids (B·V, L), example-major."""
    views = [method.views(example) for example in examples]
    return collate(views, model.tokenizer, model.max_length)


def _per_view(tensor: Tensor, num_examples: int, num_views: int) -> Tensor:
    return tensor.view(num_examples, num_views, *tensor.shape[1:])  # (B, V, ...)


def augment_tokens(batch: dict[str, Tensor], method: Method, num_examples: int) -> dict[str, Tensor]:
    """Apply each view's token augmentation to that view's rows of the flat batch."""
    if not method.token_augment:
        return batch
    ids = batch["input_ids"].clone()
    mask = batch["attention_mask"].clone()
    ids_v = _per_view(ids, num_examples, method.num_views)  # (B, V, L)
    mask_v = _per_view(mask, num_examples, method.num_views)  # (B, V, L)
    for v, augment in enumerate(method.token_augment):
        if augment is not None:
            ids_v[:, v], mask_v[:, v] = augment(ids_v[:, v], mask_v[:, v])
    return {**batch, "input_ids": ids, "attention_mask": mask}


def _augmented_embeddings(
    model: SentenceEncoder, batch: dict[str, Tensor], method: Method, num_examples: int
) -> Tensor:
    """Word embeddings of the flat batch with each view's feature augmentation applied: (B·V, L, H)."""
    assert method.embedding_augment is not None
    embeds = input_embeddings(model.backbone, batch["input_ids"])  # (B·V, L, H)
    embeds_v = _per_view(embeds, num_examples, method.num_views)  # (B, V, L, H)
    parts = [
        augment(embeds_v[:, v]) if augment is not None else embeds_v[:, v]
        for v, augment in enumerate(method.embedding_augment)
    ]
    return torch.stack(parts, dim=1).flatten(0, 1)  # (B·V, L, H)


def embed_views(model: Encoder, batch: dict[str, Tensor], method: Method, num_examples: int) -> Tensor:
    """One forward pass over all B·V rows (each row its own dropout mask): returns (B, V, D).

    With ``share_dropout_mask`` only view 0 is encoded and reused for every view, which is exactly
    "the same dropout mask for both views" without a second code path in the model. A DualEncoder
    sends view 0 through f and the other views through g.
    """
    num_views = method.num_views
    if isinstance(model, DualEncoder):
        if method.embedding_augment or method.share_dropout_mask:
            raise ValueError("two encoders support neither feature augmentations nor a shared dropout mask")
        return model.embed_views(batch, num_examples, num_views, method.head_activation)
    if method.share_dropout_mask:
        rows = {k: _per_view(v, num_examples, num_views)[:, 0] for k, v in batch.items()}  # (B, L) each
        z = model(**rows)  # (B, D)
        return z.unsqueeze(1).expand(-1, num_views, -1)  # (B, V, D)
    if method.embedding_augment:
        inputs = {k: v for k, v in batch.items() if k != "input_ids"}
        z = model(
            **inputs,
            inputs_embeds=_augmented_embeddings(model, batch, method, num_examples),
            head_activation=method.head_activation,
        )  # (B·V, D)
    else:
        z = model(**batch, head_activation=method.head_activation)  # (B·V, D)
    return z.view(num_examples, num_views, z.size(-1))  # (B, V, D)


def mlm_step_loss(
    mlm_model: nn.Module,
    tokenizer,
    batch: dict[str, Tensor],
    probability: float,  # noqa: ANN001
    generator: torch.Generator,
) -> Tensor:
    """The auxiliary masked-LM loss on the batch's rows (BERT's 80/10/10 masking of real tokens)."""
    special = ~real_token_mask(
        batch["input_ids"], batch["attention_mask"], SpecialIds.from_tokenizer(tokenizer)
    )
    masked, labels = mask_tokens(
        batch["input_ids"], special, tokenizer.mask_token_id, len(tokenizer), probability, generator
    )
    inputs = {**batch, "input_ids": masked}
    logits = mlm_model(**inputs).logits  # (B·V, L, vocab)
    return mlm_loss(logits, labels)


class TrainingDiverged(RuntimeError):
    """The loss, the gradients or the weights became NaN or infinite; the run stops, its checkpoints kept."""


def check_finite_loss(loss: Tensor, step: int, learning_rate: float) -> None:
    """Stop the run at a NaN or infinite loss, before the optimizer applies it (one sync per step)."""
    value = float(loss.detach())
    if not math.isfinite(value):
        raise TrainingDiverged(
            f"the loss is {value} at step {step} (learning rate {learning_rate:.3g}); training stopped "
            "before this step changed the weights, and the last good checkpoint is kept: lower "
            "training.learning_rate or raise training.warmup_steps"
        )


def check_finite_grad_norm(norm: Tensor, step: int, learning_rate: float) -> None:
    """Stop the run at a NaN or infinite gradient norm (without loss scaling, nothing would skip the step)."""
    value = float(norm)
    if not math.isfinite(value):
        raise TrainingDiverged(
            f"the gradient norm is {value} at step {step} (learning rate {learning_rate:.3g}); training "
            "stopped before this step changed the weights, and the last good checkpoint is kept"
        )


def check_finite_weights(module: nn.Module, step: int) -> None:
    """Refuse to save NaN or infinite weights (checked before each checkpoint and best model)."""
    bad = [name for name, p in module.named_parameters() if not bool(torch.isfinite(p).all())]
    if bad:
        raise TrainingDiverged(
            f"{len(bad)} weight tensors (first: {bad[0]}) are NaN or infinite at step {step}; not saved, the "
            "last good checkpoint is kept"
        )
