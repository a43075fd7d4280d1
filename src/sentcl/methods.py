"""Training methods: which views each example yields, how they are encoded, and which objective scores them.

A method is data + objective, nothing about optimisation:

    example --views--> (v_1..v_V) --tokenize--> (B·V, L) --[token aug per view]--> encoder --> (B, V, D) --> objective

Register new methods with ``@METHODS.register(name)`` on a builder ``(cfg: TrainConfig) -> Method``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from sentcl.config import TrainConfig
from sentcl.objectives.base import Objective
from sentcl.objectives.infonce import InfoNCE
from sentcl.registry import Registry

Example = Any
ViewFn = Callable[[Example], tuple[str, ...]]
# (input_ids (N, L), attention_mask (N, L)) -> the same, augmented; applied to the rows of one view
TokenAugment = Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]


@dataclass
class Method:
    """Everything that turns a batch of examples into a loss."""

    views: ViewFn
    objective: Objective
    #: reader of the training file that yields this method's examples
    reader: str = "lines"
    #: per-view head activation (e.g. ("tanh", "tanh", "leaky_relu")); None: the head's own
    head_activation: Sequence[str] | None = None
    #: per-view token augmentations (None entries leave a view unchanged)
    token_augment: Sequence[TokenAugment | None] | None = None
    #: encode each example once and reuse it for every view: both views share one dropout mask
    share_dropout_mask: bool = False

    @property
    def num_views(self) -> int:
        return self.objective.num_views


METHODS: Registry[Method] = Registry("method")


def duplicate_view(num_views: int = 2) -> ViewFn:
    """Unsupervised SimCSE's views: the same sentence V times (dropout makes them differ)."""

    def views(sentence: str) -> tuple[str, ...]:
        return (sentence,) * num_views

    return views


@METHODS.register("unsup_simcse")
def unsup_simcse(cfg: TrainConfig) -> Method:
    """Gao et al. 2021, unsupervised: (s, s) with independent dropout masks, InfoNCE with in-batch negatives."""
    return Method(views=duplicate_view(2), objective=InfoNCE(cfg.objective.temperature))


def build_method(cfg: TrainConfig) -> Method:
    return METHODS.build(cfg.objective.name, cfg=cfg)
