"""Token-level augmentations on ``input_ids (N, L)`` / ``attention_mask (N, L)`` (ConSERT; cutoff).

*Real* tokens are the positions with ``attention_mask == 1`` whose id is not a structural special token
([CLS], [SEP], [PAD], [MASK], <s>, </s>...); [UNK] counts as real, since it stands for a word. Only real
tokens are ever changed or moved. Each sentence i with n_i real tokens changes exactly

    c_i = clamp(round_half_up(rate * n_i), 1 if rate > 0 else 0, n_i)   (0 when n_i = 0)

of them: rounding half up, and at least one when the rate is positive, so a short sentence still changes.
Everything is vectorised over the batch (random scores, argsort ranks, cumsum); there is no Python loop
per sentence or token. Each augmentation owns a ``torch.Generator`` (seeded by an int, or drawn from the
global torch RNG when None), so a seed fixes the sequence of outputs. Inputs are never modified in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.registry import Registry

REPLACE_CHOICES = ("unk", "pad", "mask", "remove")
TOKEN_AUGMENTATIONS: Registry[TokenAugmentation] = Registry("token augmentation")


class TokenView(NamedTuple):
    """One augmented view of a batch: ids and mask, both (N, L)."""

    input_ids: Tensor
    attention_mask: Tensor


@dataclass(frozen=True)
class SpecialIds:
    """The ids the augmentations need: ``structural`` ids are never touched; unk/mask/pad are replacements."""

    pad: int
    unk: int | None
    mask: int | None
    structural: tuple[int, ...]

    @classmethod
    def from_tokenizer(cls, tokenizer: PreTrainedTokenizerBase) -> SpecialIds:
        if tokenizer.pad_token_id is None:
            raise ValueError(
                f"tokenizer {type(tokenizer).__name__} has no pad token; token augmentations need one"
            )
        structural = tuple(sorted(set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}))
        return cls(
            pad=tokenizer.pad_token_id,
            unk=tokenizer.unk_token_id,
            mask=tokenizer.mask_token_id,
            structural=structural,
        )

    def replacement(self, replace_with: str) -> int:
        """The id that ``replace_with`` ("unk", "pad", "mask") names; an error if the tokenizer lacks it."""
        token_id = {"unk": self.unk, "pad": self.pad, "mask": self.mask}[replace_with]
        if token_id is None:
            raise ValueError(f"replace_with={replace_with!r}, but the tokenizer has no {replace_with} token")
        return token_id


def as_special_ids(tokenizer: PreTrainedTokenizerBase | SpecialIds) -> SpecialIds:
    return tokenizer if isinstance(tokenizer, SpecialIds) else SpecialIds.from_tokenizer(tokenizer)


def as_generator(generator: torch.Generator | int | None) -> torch.Generator:
    """A CPU generator: the given one, one seeded by an int, or one seeded from the global torch RNG."""
    if isinstance(generator, torch.Generator):
        return generator
    seed = int(torch.randint(0, 2**62, (1,)).item()) if generator is None else int(generator)
    return torch.Generator().manual_seed(seed)


def check_rate(rate: float, name: str = "rate") -> float:
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {rate}")
    return float(rate)


def check_batch(input_ids: Tensor, attention_mask: Tensor) -> None:
    if input_ids.dim() != 2 or input_ids.shape != attention_mask.shape:
        raise ValueError(
            f"input_ids and attention_mask must both be (N, L); got {tuple(input_ids.shape)} and {tuple(attention_mask.shape)}"
        )


def real_token_mask(input_ids: Tensor, attention_mask: Tensor, special: SpecialIds) -> Tensor:
    """(N, L) bool: attended positions whose id is not structural."""
    structural = torch.tensor(special.structural, dtype=input_ids.dtype, device=input_ids.device)
    return attention_mask.bool() & ~torch.isin(input_ids, structural)


def change_counts(rate: float, n: Tensor) -> Tensor:
    """c = clamp(round_half_up(rate * n), 1 if rate > 0, n) per sentence; n (N,) -> c (N,)."""
    c = torch.floor(rate * n.double() + 0.5 + 1e-9).long()
    if rate > 0:
        c = torch.clamp(c, min=1)
    return torch.minimum(c, n)


def select_random(real: Tensor, counts: Tensor, generator: torch.Generator) -> Tensor:
    """(N, L) bool: exactly counts[i] uniformly chosen real positions of each row i."""
    scores = torch.rand(real.shape, generator=generator).to(real.device)  # (N, L)
    scores = scores.masked_fill(~real, 2.0)  # non-real positions sort last
    ranks = scores.argsort(dim=1).argsort(dim=1)  # (N, L): rank of each position in its row
    return ranks < counts[:, None]  # (N, L)


def select_span(real: Tensor, counts: Tensor, generator: torch.Generator) -> Tensor:
    """(N, L) bool: counts[i] consecutive real tokens of row i, starting uniformly in [0, n_i - c_i]."""
    n = real.sum(dim=1)  # (N,)
    u = torch.rand(n.shape, generator=generator, dtype=torch.float64).to(real.device)  # (N,)
    start = torch.minimum(torch.floor(u * (n - counts + 1).double()).long(), n - counts)  # (N,)
    rank = real.long().cumsum(dim=1) - 1  # (N, L): index of each real token among its row's real tokens
    return real & (rank >= start[:, None]) & (rank < (start + counts)[:, None])


def apply_selection(
    input_ids: Tensor,
    attention_mask: Tensor,
    selected: Tensor,
    replace_with: str,
    special: SpecialIds,
    mask_attention: bool,
) -> TokenView:
    """Replace the selected positions by an id (and zero their mask if asked), or remove them and re-pad."""
    if replace_with == "remove":
        keep = attention_mask.bool() & ~selected  # (N, L)
        order = (~keep).to(torch.int8).argsort(dim=1, stable=True)  # (N, L): kept positions first, in order
        kept = keep.sum(dim=1, keepdim=True)  # (N, 1)
        new_mask = torch.arange(input_ids.shape[1], device=input_ids.device)[None, :] < kept  # (N, L)
        new_ids = input_ids.gather(1, order).masked_fill(~new_mask, special.pad)  # (N, L)
        return TokenView(new_ids, new_mask.to(attention_mask.dtype))
    new_ids = input_ids.masked_fill(selected, special.replacement(replace_with))
    new_mask = attention_mask.masked_fill(selected, 0) if mask_attention else attention_mask.clone()
    return TokenView(new_ids, new_mask)


class TokenAugmentation:
    """Base: ``aug(input_ids, attention_mask) -> TokenView`` with its own generator."""

    def __init__(
        self, tokenizer: PreTrainedTokenizerBase | SpecialIds, generator: torch.Generator | int | None = None
    ) -> None:
        self.special = as_special_ids(tokenizer)
        self.generator = as_generator(generator)

    def __call__(self, input_ids: Tensor, attention_mask: Tensor) -> TokenView:
        check_batch(input_ids, attention_mask)
        return self.apply(input_ids, attention_mask, real_token_mask(input_ids, attention_mask, self.special))

    def apply(self, input_ids: Tensor, attention_mask: Tensor, real: Tensor) -> TokenView:
        raise NotImplementedError


class _Cutoff(TokenAugmentation):
    def __init__(
        self,
        rate: float,
        tokenizer: PreTrainedTokenizerBase | SpecialIds,
        replace_with: str,
        mask_attention: bool | None = None,
        generator: torch.Generator | int | None = None,
        exceed_rate: float | None = None,
    ) -> None:
        super().__init__(tokenizer, generator)
        if exceed_rate is not None and check_rate(exceed_rate, "exceed_rate") >= rate:
            raise ValueError(f"exceed_rate must be below rate={rate}, got {exceed_rate}")
        self.exceed_rate = exceed_rate
        if replace_with not in REPLACE_CHOICES:
            raise ValueError(f"replace_with must be one of {REPLACE_CHOICES}, got {replace_with!r}")
        if replace_with != "remove":
            self.special.replacement(replace_with)  # fail now if the tokenizer lacks the token
        self.rate = check_rate(rate)
        self.replace_with = replace_with
        self.mask_attention = replace_with == "pad" if mask_attention is None else mask_attention

    def select(self, real: Tensor, counts: Tensor) -> Tensor:
        raise NotImplementedError

    def apply(self, input_ids: Tensor, attention_mask: Tensor, real: Tensor) -> TokenView:
        n = real.sum(dim=1)  # (N,)
        counts = change_counts(self.rate, n)
        if self.exceed_rate is not None:  # strictly more than a cutoff at exceed_rate, where n allows
            counts = torch.minimum(torch.maximum(counts, change_counts(self.exceed_rate, n) + 1), n)
        if self.replace_with == "remove" or self.mask_attention:  # erasing: one real token stays visible
            counts = torch.minimum(counts, torch.clamp(n - 1, min=0))
        selected = self.select(real, counts)
        return apply_selection(
            input_ids, attention_mask, selected, self.replace_with, self.special, self.mask_attention
        )


@TOKEN_AUGMENTATIONS.register("token_cutoff")
class TokenCutoff(_Cutoff):
    """Token cutoff (ConSERT; Shen et al. 2020): c_i random real tokens -> [UNK] (or [PAD]/[MASK]/removed).

    ``mask_attention`` (default: True exactly when ``replace_with="pad"``, as ConSERT's cutoff erases the
    tokens) also sets their attention_mask to 0. ``"remove"`` deletes them and shifts the rest left. When
    tokens are erased (remove, or mask_attention) c_i is capped at n_i - 1, so one real token stays visible.

    ``exceed_rate`` (the weak view's rate, for cutoff-triplet's strong view) raises c_i to at least one more
    than a cutoff at that rate changes, wherever n_i allows: with rates 0.1 and 0.2 a 5-token sentence would
    otherwise cut 1 token in both views.
    """

    def __init__(
        self,
        rate: float,
        tokenizer: PreTrainedTokenizerBase | SpecialIds,
        replace_with: str = "unk",
        mask_attention: bool | None = None,
        generator: torch.Generator | int | None = None,
        exceed_rate: float | None = None,
    ) -> None:
        super().__init__(rate, tokenizer, replace_with, mask_attention, generator, exceed_rate)

    def select(self, real: Tensor, counts: Tensor) -> Tensor:
        return select_random(real, counts, self.generator)


@TOKEN_AUGMENTATIONS.register("span_cutoff")
class SpanCutoff(_Cutoff):
    """Span cutoff (Shen et al. 2020): c_i consecutive real tokens erased, by default -> [PAD] with mask 0."""

    def __init__(
        self,
        rate: float,
        tokenizer: PreTrainedTokenizerBase | SpecialIds,
        replace_with: str = "pad",
        mask_attention: bool | None = None,
        generator: torch.Generator | int | None = None,
    ) -> None:
        super().__init__(rate, tokenizer, replace_with, mask_attention, generator)

    def select(self, real: Tensor, counts: Tensor) -> Tensor:
        return select_span(real, counts, self.generator)


@TOKEN_AUGMENTATIONS.register("token_shuffle")
class TokenShuffle(TokenAugmentation):
    """Token shuffle: a uniform random permutation of each sentence's real tokens among the real positions.

    ConSERT permutes position ids instead; shuffling the ids among the real positions gives the encoder the
    same bag of (token, position) pairs while [CLS], [SEP] and padding keep their places.
    """

    def apply(self, input_ids: Tensor, attention_mask: Tensor, real: Tensor) -> TokenView:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)  # (N, L)
        fixed_key = 2.0 + positions.double()  # non-real positions: same key in both sorts -> stay in place
        scores = torch.rand(input_ids.shape, generator=self.generator, dtype=torch.float64).to(
            input_ids.device
        )
        source = torch.where(real, scores, fixed_key).argsort(dim=1)  # (N, L): real positions in random order
        target = torch.where(real, positions.double() / input_ids.shape[1], fixed_key).argsort(
            dim=1
        )  # (N, L)
        new_ids = input_ids.clone().scatter_(1, target, input_ids.gather(1, source))  # (N, L)
        return TokenView(new_ids, attention_mask.clone())


class MaskedLMReplacement(TokenAugmentation):
    """MLM replacement (SimCSE Table 1): mask c_i real tokens, put a masked LM's prediction in their place.

    For each masked position the prediction is argmax_v p(v | x_masked) (or a sample from
    softmax(logits / temperature) when ``sample``), over the vocabulary without the special ids and, when
    ``exclude_original``, without the original token, so exactly c_i tokens change. The model runs in
    eval mode under no_grad; ``model`` is an ``AutoModelForMaskedLM``-style module returning ``.logits``.
    """

    def __init__(
        self,
        rate: float,
        model: torch.nn.Module,
        tokenizer: PreTrainedTokenizerBase | SpecialIds,
        sample: bool = False,
        temperature: float = 1.0,
        exclude_original: bool = True,
        generator: torch.Generator | int | None = None,
    ) -> None:
        super().__init__(tokenizer, generator)
        self.rate = check_rate(rate)
        self.model = model.eval()
        self.mask_id = self.special.replacement("mask")
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.sample, self.temperature, self.exclude_original = sample, temperature, exclude_original

    def apply(self, input_ids: Tensor, attention_mask: Tensor, real: Tensor) -> TokenView:
        selected = select_random(real, change_counts(self.rate, real.sum(dim=1)), self.generator)  # (N, L)
        if not bool(selected.any()):
            return TokenView(input_ids.clone(), attention_mask.clone())
        device = next(self.model.parameters()).device
        masked = input_ids.masked_fill(selected, self.mask_id)
        with torch.no_grad():
            logits = self.model(
                input_ids=masked.to(device), attention_mask=attention_mask.to(device)
            ).logits  # (N, L, V)
        logits = logits[selected.to(device)].float().cpu()  # (M, V): one row per masked position
        banned = [
            i for i in (*self.special.structural, self.special.unk) if i is not None and i < logits.shape[1]
        ]
        logits[:, banned] = float("-inf")
        if self.exclude_original:
            logits.scatter_(1, input_ids[selected].cpu()[:, None], float("-inf"))  # (M, V)
        if self.sample:
            probs = torch.softmax(logits / self.temperature, dim=1)  # (M, V)
            predicted = torch.multinomial(probs, 1, generator=self.generator).squeeze(1)  # (M,)
        else:
            predicted = logits.argmax(dim=1)  # (M,)
        new_ids = input_ids.clone()
        new_ids[selected] = predicted.to(new_ids.device, new_ids.dtype)
        return TokenView(new_ids, attention_mask.clone())
