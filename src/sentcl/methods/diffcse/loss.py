"""DiffCSE (Chuang et al. 2022): loss = InfoNCE + lambda · L_RTD, lambda = 0.005 (BERT).

For each training row x: x' = mask(x), BERT's 80/10/10 masking of a fraction p = 0.30 of the real tokens; the
frozen generator G fills it, x'' = G(x') (its argmax at every real position but the first, which keeps x's
token: the authors' code); the discriminator D reads x'' with the row's own sentence vector h = f(x) (the
encoder's training output, after the MLP head) in place of its first input embedding, and predicts for every
token t whether it was replaced (ELECTRA's label: x''_t != x_t; a generator that restores x_t leaves it
"original"):

    L_RTD = (1 / |T|) sum over t in T of CE(D(x'', h)_t, [x''_t != x_t])

T is every real token of the batch's rows ([CLS] and [SEP] included; our reading of the paper's sum over a
sentence's tokens) or, with ``rtd_positions=padded``, every padded position (the authors' code). CE over D's two
logits is the binary cross-entropy of sigma(l_replaced - l_original). The gradient of L_RTD trains D and reaches
the encoder through h only.

``DiffCSEObjective`` wraps InfoNCE like the MLM wrapper (``sentcl.objectives.mlm``): ``attach`` builds D over a
copy of the encoder's backbone, ``token_loss`` draws the step's masks and runs G once; the step then scores the
rows with their h (``RTDTerm``), whole or in GradCache's chunks.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from sentcl.methods.diffcse.options import DIFFCSE_LAMBDA, DIFFCSE_MASKING_RATIO
from sentcl.objectives.base import Objective, TokenTermObjective
from sentcl.objectives.mlm import IGNORE_INDEX, mask_batch


def edit_tokens(
    logits: Tensor,
    original: Tensor,
    attention_mask: Tensor,
    selected: Tensor,
    edit_positions: str = "all",
    sampler: torch.Generator | None = None,
) -> Tensor:
    """x'' (N, L) from G's logits (N, L, V) on x': G's argmax (or a draw with ``sampler``) at every real position
    but the first (``all``) or at the masked (``selected``) positions only (``masked``); x elsewhere."""
    if sampler is None:
        predicted = logits.argmax(dim=-1)  # (N, L)
    else:
        probs = F.softmax(logits.float(), dim=-1).flatten(0, 1)  # (N·L, V)
        predicted = torch.multinomial(probs, 1, generator=sampler).view(original.shape)  # (N, L)
    predicted = predicted.to(original.dtype)
    if edit_positions == "masked":
        return torch.where(selected, predicted, original)  # (N, L)
    edited = torch.where(attention_mask.bool(), predicted, original)  # (N, L): padding kept
    edited[:, 0] = original[:, 0]  # the first token ([CLS]) is never edited
    return edited


def replaced_labels(original: Tensor, edited: Tensor, attention_mask: Tensor) -> Tensor:
    """(N, L) long: 1 (replaced) where x''_t != x_t on a real token, else 0 (original)."""
    return ((edited != original) & attention_mask.bool()).long()


def counted_positions(attention_mask: Tensor, rtd_positions: str = "tokens") -> Tensor:
    """(N, L) bool: the positions L_RTD averages over (real tokens, or every padded position)."""
    if rtd_positions == "padded":
        return torch.ones_like(attention_mask, dtype=torch.bool)
    return attention_mask.bool()


def rtd_loss_sum(logits: Tensor, labels: Tensor, counted: Tensor) -> Tensor:
    """Summed 2-way cross-entropy of D's logits (n, L, 2) against ``labels`` (n, L) over ``counted`` (n, L)."""
    if logits.dim() != 3 or logits.size(-1) != 2 or logits.shape[:2] != labels.shape:
        raise ValueError(
            f"logits must be (rows, length, 2) matching labels (rows, length); got {tuple(logits.shape)}, "
            f"{tuple(labels.shape)}"
        )
    targets = labels.masked_fill(~counted, IGNORE_INDEX)  # (n, L)
    flat = logits.float().reshape(-1, 2)  # (n·L, 2)
    return F.cross_entropy(flat, targets.reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum")


class RTDTerm:
    """One step's L_RTD: the rows of x'' (masks and G drawn once), and the loss of any subset of them given their
    sentence vectors h, weighted by its share of the counted positions, so that the chunks of a GradCache step
    sum to L_RTD of the whole batch."""

    name = "rtd"
    #: the step passes each row's sentence vector h: the loss is conditioned on the embeddings
    conditioned = True

    def __init__(self, discriminator: nn.Module, rows: dict[str, Tensor], weight: float) -> None:
        self.discriminator, self.weight = discriminator, weight
        self.rows = rows  # (N, L) each: input_ids (x''), attention_mask, labels, counted [, token_type_ids]
        self.count = max(int(rows["counted"].sum()), 1)

    def __call__(self, rows: dict[str, Tensor], h: Tensor) -> Tensor:
        """The unweighted L_RTD share of ``rows`` (a slice of ``self.rows``) with h (n, D): sum of CE / count."""
        logits = self.discriminator(
            rows["input_ids"], rows["attention_mask"], h, rows.get("token_type_ids")
        )  # (n, L, 2)
        return rtd_loss_sum(logits, rows["labels"], rows["counted"]) / self.count


class DiffCSEObjective(TokenTermObjective):
    """Wraps ``inner`` (InfoNCE): loss = inner(z) + lambda · L_RTD. ``generator`` is G, frozen; ``attach`` builds D.

    ``generator_output='sample'`` draws G's token from its softmax instead of the argmax; ``edit_positions``,
    ``rtd_positions``: see the module's docstring."""

    term_module_name = "discriminator"

    def __init__(
        self,
        inner: Objective,
        generator: nn.Module,
        weight: float = DIFFCSE_LAMBDA,
        masking_ratio: float = DIFFCSE_MASKING_RATIO,
        edit_positions: str = "all",
        generator_output: str = "argmax",
        rtd_positions: str = "tokens",
    ) -> None:
        super().__init__(inner, weight)
        self.masking_ratio = masking_ratio
        self.edit_positions, self.sample = edit_positions, generator_output == "sample"
        self.rtd_positions = rtd_positions
        self._frozen = (generator,)  # not a submodule: G is neither trained nor saved

    def build_term_module(self, model: nn.Module) -> nn.Module:
        from sentcl.methods.diffcse.generator import build_discriminator

        device = next(model.parameters()).device
        self._frozen = (self._frozen[0].to(device),)
        return build_discriminator(model)

    def token_loss(self, batch: dict[str, Tensor], seed: int) -> RTDTerm:
        """Mask the batch's rows from ``seed``, let G fill them: the step's L_RTD term (D runs later, with h)."""
        discriminator, tokenizer = self.bound()
        masked, mlm_labels = mask_batch(batch, tokenizer, self.masking_ratio, self.generator, seed)
        ids, mask = batch["input_ids"], batch["attention_mask"]
        generator = self._frozen[0]
        with torch.no_grad():
            logits = generator(input_ids=masked, attention_mask=mask).logits  # (N, L, V)
        sampler = None
        if self.sample:
            sampler = torch.Generator(device=logits.device)
            sampler.manual_seed(seed)
        selected = mlm_labels != IGNORE_INDEX  # (N, L)
        edited = edit_tokens(logits, ids, mask, selected, self.edit_positions, sampler)  # (N, L)
        rows = {k: v for k, v in batch.items() if k in ("attention_mask", "token_type_ids")}
        rows["input_ids"] = edited
        rows["labels"] = replaced_labels(ids, edited, mask)
        rows["counted"] = counted_positions(mask, self.rtd_positions)
        return RTDTerm(discriminator, rows, self.weight)
