"""Training methods: which views each example yields, how they are encoded, and which objective scores them.

A method is data + objective, nothing about optimisation:

    example --views--> (v_1..v_V) --tokenize--> (B·V, L) --[token/feature aug per view]--> encoder(s)
            --> (B, V, D) --> objective

Register a method with ``@register_method(name, reader=...)`` on a builder
``(cfg, corpus, tokenizer) -> Method``; the reader names the training-file format it needs.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig
from sentcl.data.augment import FEATURE_AUGMENTATIONS, TEXT_AUGMENTATIONS, TOKEN_AUGMENTATIONS
from sentcl.data.readers import Corpus
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import InfoNCE
from sentcl.objectives.supervised import SupervisedInfoNCE
from sentcl.objectives.triplet import CutoffTriplet
from sentcl.registry import Registry

logger = logging.getLogger(__name__)

Example = Any
ViewFn = Callable[[Example], tuple[str, ...]]
# (input_ids (N, L), attention_mask (N, L)) -> the same, augmented; applied to the rows of one view
TokenAugment = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]
# inputs_embeds (N, L, H) -> the same, augmented
EmbeddingAugment = Callable[[Tensor], Tensor]


@dataclass
class Method:
    """Everything that turns a batch of examples into a loss."""

    views: ViewFn
    objective: Objective
    #: the training examples (by default the corpus' own)
    examples: list[Example]
    #: per-view head activation (e.g. ("tanh", "tanh", "leaky_relu")); None: the head's own
    head_activation: Sequence[str] | None = None
    #: per-view token augmentations (None entries leave a view unchanged)
    token_augment: Sequence[TokenAugment | None] | None = None
    #: per-view augmentations of the word embeddings (feature cutoff); None entries leave a view unchanged
    embedding_augment: Sequence[EmbeddingAugment | None] | None = None
    #: encode each example once and reuse it for every view: all views share one dropout mask
    share_dropout_mask: bool = False
    #: batches of random examples, or of consecutive ones (Quick-Thoughts)
    sampler: str = "random"
    #: batch metadata for the objective (e.g. Quick-Thoughts' positions), from the batch's examples
    meta: Callable[[Sequence[Example]], dict[str, Tensor]] | None = None
    #: stochastic parts, reseeded from (seed, step) before every step so that resuming is exact
    stochastic: list[Any] = field(default_factory=list)
    #: every view is the example's own text (augmentations act on tokens or embeddings only), so a
    #: streaming corpus' cached token ids can be collated directly instead of tokenising the views
    views_are_copies: bool = False

    @property
    def num_views(self) -> int:
        return self.objective.num_views

    def set_epoch(self, epoch: int) -> None:
        """Views that draw per epoch (next-3-sentences partners) get the epoch number."""
        set_epoch = getattr(self.views, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch)

    def reseed(self, seed: int, step: int) -> None:
        for k, part in enumerate(self.stochastic):
            value = (seed * 1_000_003 + step) * 31 + k
            if isinstance(getattr(part, "generator", None), torch.Generator):
                part.generator.manual_seed(value)
            if isinstance(getattr(part, "rng", None), random.Random):
                part.rng.seed(value)


Builder = Callable[[TrainConfig, Corpus, PreTrainedTokenizerBase], Method]


@dataclass(frozen=True)
class MethodSpec:
    reader: str
    build: Builder


METHODS: Registry[MethodSpec] = Registry("method")


def register_method(name: str, reader: str = "lines") -> Callable[[Builder], Builder]:
    def decorator(build: Builder) -> Builder:
        METHODS.register(name)(lambda: MethodSpec(reader, build))
        return build

    return decorator


def method_spec(cfg: TrainConfig) -> MethodSpec:
    try:
        return METHODS.build(cfg.objective.name)
    except KeyError as err:
        raise ConfigError(f"objective.name: {err.args[0]}") from None


def build_method(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    return method_spec(cfg).build(cfg, corpus, tokenizer)


# --------------------------------------------------------------------------- view helpers


def duplicate_view(num_views: int = 2) -> ViewFn:
    """Unsupervised SimCSE's views: the same sentence V times (dropout makes them differ)."""

    def views(sentence: str) -> tuple[str, ...]:
        return (sentence,) * num_views

    return views


def positive_view_augmented(augment: Callable[[str], str]) -> ViewFn:
    """(s, aug(s)): a discrete augmentation of the positive view (the paper's Table 1)."""

    def views(sentence: str) -> tuple[str, str]:
        return sentence, augment(sentence)

    return views


def text_augmentation(cfg: TrainConfig, tokenizer: PreTrainedTokenizerBase) -> Callable[[str], str] | None:
    d = cfg.data
    if d.augmentation is None:
        return None
    if d.augmentation not in TEXT_AUGMENTATIONS:
        raise ConfigError(
            f"data.augmentation={d.augmentation!r}; valid: {', '.join(TEXT_AUGMENTATIONS.names())}"
        )
    if d.augmentation == "delete_one_word":
        return TEXT_AUGMENTATIONS.build(d.augmentation, seed=cfg.training.seed)
    kwargs: dict[str, Any] = {"k": d.augmentation_rate, "seed": cfg.training.seed}
    if d.augmentation == "synonym_replacement":
        kwargs["wordnet"] = d.wordnet_dir
    if d.augmentation == "mlm_replacement":
        kwargs = {"k": d.augmentation_rate, "model": d.mlm_augmentation_model or cfg.model.name_or_path}
        kwargs["generator"] = torch.Generator().manual_seed(cfg.training.seed)
    return TEXT_AUGMENTATIONS.build(d.augmentation, **kwargs)


def token_augmentation(
    cfg: TrainConfig, tokenizer: PreTrainedTokenizerBase
) -> tuple[TokenAugment | None, EmbeddingAugment | None]:
    d = cfg.data
    name, rate, seed = d.token_augmentation, d.token_augmentation_rate, cfg.training.seed
    if name is None:
        return None, None
    if name == "feature_cutoff":
        return None, FEATURE_AUGMENTATIONS.build(name, rate=rate, generator=seed)
    if name in ("token_cutoff", "span_cutoff"):
        return TOKEN_AUGMENTATIONS.build(
            name, rate=rate, tokenizer=tokenizer, replace_with=d.cutoff_token, generator=seed
        ), None
    if name == "token_shuffle":
        return TOKEN_AUGMENTATIONS.build(name, tokenizer=tokenizer, generator=seed), None
    valid = ["feature_cutoff", "span_cutoff", "token_cutoff", "token_shuffle"]
    raise ConfigError(f"data.token_augmentation={name!r}; valid: {', '.join(valid)}")


# --------------------------------------------------------------------------- methods


@register_method("unsup_simcse", reader="lines")
def unsup_simcse(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Gao et al. 2021, unsupervised: (s, s) with independent dropout masks, InfoNCE with in-batch negatives.

    Ablations: ``data.augmentation`` (a discrete augmentation of the positive view), ``data.token_augmentation``
    (ConSERT's token shuffle / token cutoff / span cutoff / feature cutoff), ``model.same_dropout_mask``,
    ``objective.similarity=dot``; ``objective.symmetric`` is seed 004's symmetric 2N x 2N loss (not eq. 1).
    """
    text_aug = text_augmentation(cfg, tokenizer)
    token_aug, embedding_aug = token_augmentation(cfg, tokenizer)
    if cfg.model.same_dropout_mask and (text_aug or token_aug or embedding_aug):
        raise ConfigError("model.same_dropout_mask encodes one view for both: it excludes augmentations")
    return Method(
        views=positive_view_augmented(text_aug) if text_aug else duplicate_view(2),
        objective=InfoNCE(cfg.objective.temperature, cfg.objective.similarity, cfg.objective.symmetric),
        examples=corpus.examples,
        token_augment=[None, token_aug] if token_aug else None,
        embedding_augment=[None, embedding_aug] if embedding_aug else None,
        share_dropout_mask=cfg.model.same_dropout_mask,
        stochastic=[a for a in (text_aug, token_aug, embedding_aug) if a is not None],
        views_are_copies=text_aug is None,
    )


@register_method("sup_simcse", reader="nli_csv")
def sup_simcse(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Gao et al. 2021, supervised: (premise, entailment, contradiction[, neutral]) triples, eq. 5."""
    views = 4 if cfg.data.use_neutral else 3
    bad = next(
        (i for i, ex in enumerate(corpus.examples) if not isinstance(ex, tuple) or len(ex) < views), None
    )
    if bad is not None:
        raise ConfigError(
            f"sup_simcse needs (premise, entailment, contradiction{', neutral' if views == 4 else ''}) examples; "
            f"example {bad} of {corpus.path} is {corpus.examples[bad]!r} (check data.reader / data.use_neutral)"
        )
    return Method(
        views=lambda example: tuple(example[:views]),
        objective=SupervisedInfoNCE(
            cfg.objective.temperature,
            cfg.objective.hard_negative_weight,
            views - 2,
            similarity=cfg.objective.similarity,
        ),
        examples=corpus.examples,
    )


@register_method("sup_pairs", reader="pairs")
def sup_pairs(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Gao et al. 2021, Table 4 / Table 7's "no hard negative": supervised pairs (x, x+), no hard negatives.

    InfoNCE (eq. 1) with x+ as the positive and the other examples' x+ as in-batch negatives. Examples are
    two-column pair files (``data.reader=pairs``: QQP, Flickr30k captions, ParaNMT, ...), or the first two
    fields (premise, entailment) of an NLI reader's triples ("entailment only").
    """
    bad = next((i for i, ex in enumerate(corpus.examples) if not isinstance(ex, tuple) or len(ex) < 2), None)
    if bad is not None:
        raise ConfigError(
            f"sup_pairs needs (sentence, positive) examples; example {bad} of {corpus.path} is "
            f"{corpus.examples[bad]!r} (check data.reader)"
        )
    if cfg.objective.symmetric:
        raise ConfigError("objective.symmetric is unsup_simcse's option; sup_pairs uses eq. 1")
    return Method(
        views=lambda example: (example[0], example[1]),
        objective=InfoNCE(cfg.objective.temperature, cfg.objective.similarity),
        examples=corpus.examples,
    )


@register_method("cutoff_triplet", reader="lines")
def cutoff_triplet(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Token cutoff + triplet (seed 003): anchor s, weak view s* (10% cut), strong view s** (20% cut, LeakyReLU head).

    ``objective.triplet_form=paper`` (default): views (s, s, s*, s**); loss = NT-Xent(s, s') (dropout noise)
    + lambda · mean max(0, m + sim(s, s**) − sim(s, s*)), m = 0; inference is [CLS] through the MLP
    (``model.mlp_only_train=false``). ``weak_positive`` (ours): views (s, s*, s**), InfoNCE(s, s*).
    The strong view cuts strictly more tokens than the weak one wherever the sentence has enough.
    """
    if cfg.model.pooler not in (None, "cls"):  # None: the start model's own, cls for a plain backbone
        raise ConfigError("cutoff_triplet needs model.pooler=cls: the strong view's MLP head uses LeakyReLU")
    o, seed = cfg.objective, cfg.training.seed
    if o.strong_cutoff <= o.weak_cutoff:
        raise ConfigError(
            f"cutoff_triplet needs objective.strong_cutoff > weak_cutoff, got {o.strong_cutoff} <= {o.weak_cutoff}"
        )
    if o.triplet_form == "paper" and cfg.model.mlp_only_train:
        logger.warning(
            "cutoff_triplet: the paper's sentence vector is [CLS] through the MLP; model.mlp_only_train=true "
            "drops the MLP at inference"
        )
    weak = TOKEN_AUGMENTATIONS.build(
        "token_cutoff",
        rate=o.weak_cutoff,
        tokenizer=tokenizer,
        replace_with=cfg.data.cutoff_token,
        generator=seed,
    )
    strong = TOKEN_AUGMENTATIONS.build(
        "token_cutoff",
        rate=o.strong_cutoff,
        tokenizer=tokenizer,
        replace_with=cfg.data.cutoff_token,
        generator=seed + 1,
        exceed_rate=o.weak_cutoff,
    )
    objective = CutoffTriplet(o.temperature, o.margin, o.triplet_weight, o.triplet_form)
    paper = o.triplet_form == "paper"
    return Method(
        views=duplicate_view(objective.num_views),
        objective=objective,
        examples=corpus.examples,
        token_augment=[None, None, weak, strong] if paper else [None, weak, strong],
        head_activation=("tanh",) * (objective.num_views - 1) + (o.strong_activation,),
        stochastic=[weak, strong],
        views_are_copies=True,
    )


@register_method("next_sentence", reader="next_sentence")
def next_sentence(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """SimCSE Table 2: the positive of s_i is s_(i+1) ("next sentence") or one of the next three
    (``data.next_sentence_window=3``); one encoder, or f for s_i and g for the positive (``model.two_encoders``)."""
    from sentcl.data.ordered import NextSentenceViews

    return Method(
        views=NextSentenceViews(cfg.data.next_sentence_window, cfg.training.seed),
        objective=InfoNCE(cfg.objective.temperature),
        examples=corpus.examples,
    )


@register_method("quick_thoughts", reader="ordered_lines")
def quick_thoughts(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Logeswaran & Lee 2018: batches of consecutive sentences; f(s_i)·g(s_j) scores, softmax over the batch
    with the diagonal masked, targets the previous and next sentences (seed 002's form: ``objective.
    quick_thoughts_reduction=kl``, ``quick_thoughts_diagonal=zero``). Two encoders (``model.two_encoders``,
    inference embedding [f(s); g(s)] with ``model.dual_embedding=concat``) or one shared encoder."""
    from sentcl.objectives.quick_thoughts import QuickThoughts

    def meta(examples: Sequence[Example]) -> dict[str, Tensor]:
        return {
            "positions": torch.tensor([e.position for e in examples], dtype=torch.long),
            "doc_ids": torch.tensor([e.doc_id for e in examples], dtype=torch.long),
        }

    return Method(
        views=lambda example: (example.text, example.text),
        objective=QuickThoughts(
            context_size=cfg.objective.context_size,
            reduction=cfg.objective.quick_thoughts_reduction,
            diagonal=cfg.objective.quick_thoughts_diagonal,
        ),
        examples=corpus.examples,
        sampler="contiguous",
        meta=meta,
    )
