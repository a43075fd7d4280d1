"""The ``objective:`` section's base options: what every method accepts, and the option fields several methods
share (temperature, similarity, teachers). Torch-free: each method's own options class (``sentcl/methods/<name>/options.py``)
derives from these, and the catalogue (``sentcl.config.method_catalogue``) lists the methods' records by name, so reading a
recipe never imports a method's torch code.

Each value is checked once, here or in the method's options class; the objectives built from a typed options
instance trust it.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sentcl.config.typed import ConfigError, check_choice, check_positive, opt
from sentcl.defaults import TEMPERATURE

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig

#: the augmentation keys of the data section (unsupervised SimCSE's ablations read them)
AUGMENTATION_KEYS = (
    "data.augmentation",
    "data.augmentation_rate",
    "data.mlm_augmentation_model",
    "data.wordnet_dir",
    "data.token_augmentation",
    "data.token_augmentation_rate",
    "data.cutoff_token",
)

#: the model options of methods that may train two encoders (f for view 0, g for the others; SimCSE Table 2)
TWO_ENCODER_KEYS = ("model.two_encoders", "model.dual_embedding")

#: what an InfoNCE over in-batch negatives needs (``ObjectiveConfig.min_batch``)
IN_BATCH_NEGATIVES = (
    2,
    "its InfoNCE takes the batch's other sentences as negatives: with one sentence the positive is the only "
    "candidate and the loss is exactly 0",
)

#: logits of InfoNCE-like objectives: cosine / tau (the papers) or the dot product / tau
SIMILARITIES = ("cosine", "dot")


@dataclass
class ObjectiveConfig:
    """The ``objective:`` section: the method's name and the wrapper options every method accepts.

    Each method declares its own options as a dataclass subclass (``sentcl/methods/<name>/options.py``), listed by name
    in ``sentcl.config.method_catalogue``; parsing picks the subclass from ``name``, so ``cfg.objective`` is an instance
    of the chosen method's options class."""

    name: str = opt("unsup_simcse", "Training method (views + objective), e.g. unsup_simcse.")
    mlm_weight: float = opt(0.0, "Auxiliary MLM loss weight lambda (SimCSE uses 0.1; 0 disables).")
    mlm_probability: float = opt(0.15, "Fraction of tokens masked for the auxiliary MLM loss.")
    mlm_new_head: bool = opt(False, "Allow a freshly initialised MLM head when the checkpoint has none.")
    matryoshka_dims: list[int] | None = opt(
        None,
        "Matryoshka: also apply the loss to the first d dimensions of the embeddings, for each d of this "
        "strictly decreasing list (null: off).",
    )

    #: the method-scoped keys of other sections (fields marked ``method_scoped``) this method reads
    uses: typing.ClassVar[tuple[str, ...]] = ()
    #: what the objective needs to learn at all, checked by ``sentcl.training.validation.check_needs``: the
    #: options whose values divide the logits (temperatures) and those that multiply them (scales, 1 / tau);
    #: float32 logits must not saturate under either
    temperature_keys: typing.ClassVar[tuple[str, ...]] = ()
    scale_keys: typing.ClassVar[tuple[str, ...]] = ()
    #: the views are sentences written into templates (model.pooler=mask reads their [MASK])
    templated_views: typing.ClassVar[bool] = False

    def check(self, cfg: TrainConfig) -> None:
        """The method's rules on other sections (e.g. a pooler it needs); run by ``sentcl.training.validation``."""

    def min_batch(self) -> tuple[int, str]:
        """The fewest sentences per batch (every process' together) with which the objective can learn, and
        why; ``sentcl.training.validation.check_needs`` refuses a smaller ``training.batch_size``."""
        return 1, ""

    def __post_init__(self) -> None:
        if self.mlm_weight < 0:
            raise ConfigError(f"objective.mlm_weight must be >= 0, got {self.mlm_weight!r}")
        if not 0.0 < self.mlm_probability < 1.0:
            raise ConfigError(f"objective.mlm_probability must be in (0, 1), got {self.mlm_probability!r}")
        dims = self.matryoshka_dims
        if dims is not None and (
            not dims or any(d <= 0 for d in dims) or any(a <= b for a, b in zip(dims, dims[1:], strict=False))
        ):
            raise ConfigError(
                f"objective.matryoshka_dims must be positive and strictly decreasing, got {dims!r}"
            )


def temperature_option(default: float = TEMPERATURE) -> Any:
    return opt(default, "Temperature tau of InfoNCE: logits are cos(h_i, h_j) / tau.")


def similarity_option() -> Any:
    return opt(
        "cosine",
        "Logits are cos(h_i, h_j) / tau ('cosine', the paper) or h_i . h_j / tau ('dot', SimCSE Table D.1's "
        "N/A column, with tau = 1).",
    )


@dataclass
class TemperatureOptions(ObjectiveConfig):
    """The options of a method with an InfoNCE-like temperature (its own options follow). The one check of
    ``temperature > 0``."""

    temperature: float = temperature_option()

    temperature_keys: typing.ClassVar[tuple[str, ...]] = ("temperature",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.temperature", self.temperature)

    def min_batch(self) -> tuple[int, str]:
        return IN_BATCH_NEGATIVES


@dataclass
class InfoNCEOptions(TemperatureOptions):
    """The options of a method scored by InfoNCE: temperature and similarity (its own options follow)."""

    similarity: str = similarity_option()

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("objective.similarity", self.similarity, SIMILARITIES)


#: the model options of a method that distils teachers; the width mapping is read by the methods that compare vectors
TEACHER_KEYS = ("model.teacher", "model.teacher_mapping")


@dataclass
class TeacherOptions(ObjectiveConfig):
    """The options of a method that distils teachers (``model.teacher``); its own options follow."""

    uses: typing.ClassVar[tuple[str, ...]] = ("model.teacher",)

    def check(self, cfg: TrainConfig) -> None:
        if cfg.model.teacher is None:
            raise ConfigError(
                f"{self.name} distils a teacher: set model.teacher (a model folder of any kind sentcl opens, a "
                "hub id or an offline short name such as all-MiniLM-L6-v2)"
            )
