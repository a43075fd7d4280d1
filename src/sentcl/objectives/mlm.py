"""Masked-language-model auxiliary loss (SimCSE's ``--do_mlm``): loss = InfoNCE + lambda * MLM, lambda = 0.1.

Masking follows BERT (Devlin et al. 2019): each non-special token is selected with probability p = 0.15;
of the selected tokens 80% become [MASK], 10% a uniformly random vocabulary id, 10% stay as they are.
Labels hold the original id at selected positions and -100 (ignored) everywhere else.

    L_mlm = -mean over selected positions t of log softmax(logits_t)[x_t]

``MaskedLMObjective`` wraps any objective with this term; its ``token_loss`` works on the step's token rows,
split into chunks or not, so it composes with GradCache.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from sentcl.data.augment.tokens import SpecialIds, real_token_mask
from sentcl.objectives.base import Objective, TokenTermObjective

IGNORE_INDEX = -100
MLM_WEIGHT = 0.1


def mask_tokens(
    input_ids: Tensor,
    special_mask: Tensor,
    mask_token_id: int,
    vocab_size: int,
    probability: float = 0.15,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    """BERT's 80/10/10 masking: (N, L) ids -> (masked ids (N, L), labels (N, L) with -100 where not selected).

    ``special_mask`` (N, L) is True where a token must never be selected: [CLS], [SEP] and padding.
    Random draws come from ``generator`` (on its device), so a seeded generator gives the same masks.
    """
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must be shaped (batch, length), got {tuple(input_ids.shape)}")
    if special_mask.shape != input_ids.shape:
        raise ValueError(
            f"special_mask shape {tuple(special_mask.shape)} != input_ids shape {tuple(input_ids.shape)}"
        )
    if not 0.0 < probability <= 1.0:
        raise ValueError(f"masking probability must be in (0, 1], got {probability}")
    if vocab_size <= 0 or not 0 <= mask_token_id < vocab_size:
        raise ValueError(f"mask_token_id {mask_token_id} must lie in [0, vocab_size={vocab_size})")
    draw_device = generator.device if generator is not None else input_ids.device
    shape = input_ids.shape

    def coin(p: float) -> Tensor:
        return (torch.rand(shape, generator=generator, device=draw_device) < p).to(input_ids.device)

    selected = coin(probability) & ~special_mask.to(device=input_ids.device, dtype=torch.bool)  # (N, L)
    to_mask = selected & coin(0.8)  # (N, L): 80% of selected -> [MASK]
    to_random = selected & ~to_mask & coin(0.5)  # (N, L): half of the remaining 20% -> random id
    random_ids = torch.randint(vocab_size, shape, generator=generator, device=draw_device).to(
        input_ids.device
    )

    labels = input_ids.masked_fill(~selected, IGNORE_INDEX)  # (N, L)
    masked = input_ids.masked_fill(to_mask, mask_token_id)  # (N, L)
    masked = torch.where(to_random, random_ids.to(input_ids.dtype), masked)  # (N, L)
    return masked, labels


def mlm_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Mean cross-entropy over positions whose label is not -100: logits (N, L, V), labels (N, L).

    A batch with no selected position gives 0 (still attached to the graph), not NaN.
    """
    if logits.dim() != 3 or logits.shape[:2] != labels.shape:
        raise ValueError(
            f"logits must be (batch, length, vocab) matching labels (batch, length); got {tuple(logits.shape)}, {tuple(labels.shape)}"
        )
    if not (labels != IGNORE_INDEX).any():
        return logits.sum() * 0.0
    vocab = logits.size(-1)
    flat_logits = logits.reshape(-1, vocab)  # (N*L, V)
    flat_labels = labels.reshape(-1)  # (N*L,)
    return F.cross_entropy(flat_logits, flat_labels, ignore_index=IGNORE_INDEX)


def add_mlm(
    outputs: dict[str, Tensor], mlm: Tensor, weight: float = MLM_WEIGHT, key: str = "mlm"
) -> dict[str, Tensor]:
    """New outputs dict with loss = outputs["loss"] + weight * mlm and the token term kept as ``key``."""
    if "loss" not in outputs:
        raise KeyError("objective outputs have no 'loss' entry")
    combined = dict(outputs)
    combined["loss"] = outputs["loss"] + weight * mlm
    combined[key] = mlm.detach()
    return combined


def mlm_loss_sum(logits: Tensor, labels: Tensor) -> Tensor:
    """Summed cross-entropy over positions whose label is not -100: logits (N, L, V), labels (N, L).

    0 (attached to the graph) when no position is selected. Divided by the whole batch's count of selected
    positions it is ``mlm_loss``; summed over any split of the rows it is the whole batch's sum.
    """
    if logits.dim() != 3 or logits.shape[:2] != labels.shape:
        raise ValueError(
            f"logits must be (batch, length, vocab) matching labels (batch, length); got {tuple(logits.shape)}, {tuple(labels.shape)}"
        )
    flat_logits = logits.reshape(-1, logits.size(-1))  # (N*L, V)
    flat_labels = labels.reshape(-1)  # (N*L,)
    return F.cross_entropy(flat_logits.float(), flat_labels, ignore_index=IGNORE_INDEX, reduction="sum")


class TokenLoss:
    """One step's MLM term: the masked rows of the whole batch (masks drawn once), and the loss of any subset
    of them weighted by its share of the selected positions, so that the chunks of a GradCache step sum to
    λ · L_mlm of the whole batch."""

    name = "mlm"
    #: scored on the token rows alone (DiffCSE's term, ``sentcl.methods.diffcse.loss``, also takes h)
    conditioned = False

    def __init__(self, head: nn.Module, inputs: dict[str, Tensor], labels: Tensor, weight: float) -> None:
        self.head, self.weight = head, weight
        self.rows = {**inputs, "labels": labels}  # (N, L) each: chunk them like the encoder's rows
        self.count = max(int((labels != IGNORE_INDEX).sum()), 1)

    def __call__(self, rows: dict[str, Tensor]) -> Tensor:
        """The unweighted MLM loss share of ``rows`` (a slice of ``self.rows``): sum of CE / whole count."""
        inputs = {k: v for k, v in rows.items() if k != "labels"}
        logits = self.head(**inputs).logits  # (n, L, vocab)
        return mlm_loss_sum(logits, rows["labels"]) / self.count


def mask_batch(
    batch: dict[str, Tensor], tokenizer: Any, probability: float, generator: torch.Generator, seed: int
) -> tuple[Tensor, Tensor]:
    """BERT's masks over the batch's real tokens, drawn from ``generator`` seeded with ``seed``: (masked ids
    (N, L), labels (N, L))."""
    if tokenizer.mask_token_id is None:
        raise ValueError(f"tokenizer {type(tokenizer).__name__} has no mask token to mask the rows with")
    generator.manual_seed(seed)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    special = ~real_token_mask(ids, mask, SpecialIds.from_tokenizer(tokenizer))  # (N, L)
    return mask_tokens(ids, special, tokenizer.mask_token_id, len(tokenizer), probability, generator)


class MaskedLMObjective(TokenTermObjective):
    """Wraps ``inner``: loss = inner(z) + λ · L_mlm, the MLM loss on the step's token rows (SimCSE's
    ``--do_mlm``, λ = 0.1). The masked-LM head shares the encoder's backbone (``attach``)."""

    term_module_name = "mlm"

    def __init__(
        self,
        inner: Objective,
        weight: float = MLM_WEIGHT,
        probability: float = 0.15,
        name_or_path: str = "",
        new_head: bool = False,
    ) -> None:
        super().__init__(inner, weight)
        self.probability, self.name_or_path, self.new_head = probability, name_or_path, new_head

    def build_term_module(self, model: nn.Module) -> nn.Module:
        from sentcl.modeling.mlm_head import attach_mlm_head

        return attach_mlm_head(model, self.name_or_path, self.new_head)  # type: ignore[arg-type]

    def token_loss(self, batch: dict[str, Tensor], seed: int) -> TokenLoss:
        """Draw BERT's masks over the batch's real tokens from ``seed``: the step's MLM term."""
        head, tokenizer = self.bound()
        masked, labels = mask_batch(batch, tokenizer, self.probability, self.generator, seed)
        return TokenLoss(head, {**batch, "input_ids": masked}, labels, self.weight)


def mlm_wrap(
    objective: Objective, weight: float, probability: float, name_or_path: str, new_head: bool
) -> Objective:
    """``objective`` with the auxiliary MLM term when ``weight`` > 0 (objective.mlm_weight), else itself."""
    if weight <= 0:
        return objective
    return MaskedLMObjective(objective, weight, probability, name_or_path, new_head)
