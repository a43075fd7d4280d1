"""What a method builds (``Method``) and the registry of builders.

A method is data + objective, nothing about optimisation:

    example --views--> (v_1..v_V) --tokenize--> (B·V, L) --[token/feature aug per view]--> encoder(s)
            --> (B, V, D) --> objective

Each method lives in ``sentcl/methods/<name>/``: a torch-free record and options class (``options.py``, listed in
:mod:`sentcl.config.method_catalogue`) and a builder ``build(cfg, options, corpus, tokenizer) -> Method`` (``build.py``),
found here by the record's package. The builder receives ``cfg.objective`` as ``options``, an instance of the
record's options class, and trusts it.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig
from sentcl.config.method_catalogue import method_record
from sentcl.config.method_record import MethodRecord
from sentcl.data.readers import Corpus
from sentcl.files.read import preview
from sentcl.objectives.base import Objective
from sentcl.objectives.matryoshka import matryoshka_wrap
from sentcl.objectives.mlm import mlm_wrap

if TYPE_CHECKING:
    from sentcl.training.companion import Companion
from sentcl.rng import step_seed

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
    #: state the loop keeps beside the model (a momentum encoder, a queue): the protocol
    #: ``sentcl.training.companion.Companion`` (objective_inputs, after_step, state_dict, load_state_dict);
    #: None: the method needs none
    companion: Companion | None = None
    #: with ``model.two_encoders``: the encoder of each view, "f" or "g" (the method's own rule, set in its
    #: build.py); None: the method trains one encoder only
    view_encoders: tuple[str, ...] | None = None

    @property
    def num_views(self) -> int:
        return self.objective.num_views

    def set_epoch(self, epoch: int) -> None:
        """Views that draw per epoch (next-3-sentences partners) get the epoch number."""
        set_epoch = getattr(self.views, "set_epoch", None)
        if callable(set_epoch):
            set_epoch(epoch)

    def reseed(self, seed: int, step: int) -> None:
        """Seed each stochastic part from (seed, step, its index): a resumed run draws what the first did."""
        for k, part in enumerate(self.stochastic):
            value = step_seed(seed, step, k, STOCHASTIC_STREAMS)
            if isinstance(getattr(part, "generator", None), torch.Generator):
                part.generator.manual_seed(value)
            if isinstance(getattr(part, "rng", None), random.Random):
                part.rng.seed(value)


#: seeds per step for a method's stochastic parts (their index is the stream)
STOCHASTIC_STREAMS = 31

#: (cfg, its objective options typed as the method's options class, corpus, tokenizer) -> Method
Builder = Callable[[TrainConfig, Any, Corpus, PreTrainedTokenizerBase], Method]


def method_spec(cfg: TrainConfig | str) -> MethodRecord:
    """The record of ``cfg.objective.name`` (or of a name): options class, reader, paper."""
    name = cfg if isinstance(cfg, str) else cfg.objective.name
    try:
        return method_record(name)
    except KeyError as err:
        raise ConfigError(f"objective.name: {err.args[0]}") from None


def method_builder(name: str) -> Builder:
    """The builder of method ``name``: ``build`` in its package's ``build`` module (``sentcl.methods.<name>.build``),
    imported on first use, so that the catalogue stays torch-free and a method is one package + one line."""
    record = method_spec(name)
    module = importlib.import_module(f"{record.package}.build")
    build = getattr(module, "build", None)
    if not callable(build):
        raise TypeError(f"{module.__name__} has no build(cfg, options, corpus, tokenizer) function")
    return build  # type: ignore[no-any-return]


def build_method(cfg: TrainConfig, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    record = method_spec(cfg)
    if not isinstance(cfg.objective, record.options):
        raise ConfigError(
            f"objective is a {type(cfg.objective).__name__}; {record.name} takes {record.options.__name__}"
        )
    method = method_builder(record.name)(cfg, cfg.objective, corpus, tokenizer)
    # ---- objective wrappers (the base options every method accepts), applied here and only here:
    # Matryoshka (objective.matryoshka_dims) on the embeddings, then MLM (objective.mlm_weight) outermost.
    method.objective = matryoshka_wrap(method.objective, cfg.objective.matryoshka_dims)
    o = cfg.objective  # the MLM wrapper outermost: the step must see its token loss
    method.objective = mlm_wrap(
        method.objective, o.mlm_weight, o.mlm_probability, cfg.model.name_or_path, o.mlm_new_head
    )
    return method


def check_scores_vary(corpus: Corpus, method: str, score: Callable[[Example], float]) -> None:
    """A ranking loss on gold scores learns nothing when every score is equal (loss 0, weights unchanged):
    a ConfigError naming the file, as ``sentcl eval --pairs`` refuses constant scores."""
    scores = {score(example) for example in corpus.examples}
    if len(scores) < 2:
        value = next(iter(scores), None)
        raise ConfigError(
            f"{method}: every score in {corpus.path} is {value!r}; a ranking loss on scores needs two or more "
            "different scores (it would train nothing)"
        )


def check_examples(corpus: Corpus, ok: Callable[[Example], bool], method: str, needs: str, hint: str) -> None:
    """The first example that ``ok`` rejects is a ConfigError naming its index and file: ``method`` needs
    ``needs`` examples (``hint``: which settings to check)."""
    bad = next((i for i, example in enumerate(corpus.examples) if not ok(example)), None)
    if bad is not None:
        raise ConfigError(
            f"{method} needs {needs} examples; example {bad} of {corpus.path} is {preview(corpus.examples[bad])} "
            f"({hint})"
        )
