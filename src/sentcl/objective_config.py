"""The ``objective:`` section, scoped by method: its base options, the method's own options class, and the keys
of other sections that only some methods read.

Each method declares its options as a dataclass subclass of :class:`ObjectiveConfig` (registered with
``sentcl.methods.register_method(name, options=...)``); parsing picks the subclass from ``objective.name``, so an
option of another method is an error that lists the chosen method's own.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sentcl.typed_config import ConfigError, describe_fields, opt

if TYPE_CHECKING:
    from sentcl.config import TrainConfig

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

#: keys of other sections that only some methods read: a non-default value under a method whose options class
#: does not list the key in ``uses`` is a ConfigError (sentcl.validation); a key that any method lists in its
#: ``uses`` is scoped the same way (method_scoped_keys)
METHOD_SCOPED_KEYS = (
    *AUGMENTATION_KEYS,
    "data.next_sentence_window",
    "data.use_neutral",
    "data.negation_file",
    "model.same_dropout_mask",
    "model.two_encoders",
    "model.dual_embedding",
)


@dataclass
class ObjectiveConfig:
    """The ``objective:`` section: the method's name and the wrapper options every method accepts.

    Each method declares its own options as a dataclass subclass (registered with
    ``sentcl.methods.register_method(name, options=...)``); parsing picks the subclass from ``name``, so
    ``cfg.objective`` is an instance of the chosen method's options class."""

    name: str = opt("unsup_simcse", "Training method (views + objective), e.g. unsup_simcse.")
    mlm_weight: float = opt(0.0, "Auxiliary MLM loss weight lambda (SimCSE uses 0.1; 0 disables).")
    mlm_probability: float = opt(0.15, "Fraction of tokens masked for the auxiliary MLM loss.")
    mlm_new_head: bool = opt(False, "Allow a freshly initialised MLM head when the checkpoint has none.")
    matryoshka_dims: list[int] | None = opt(
        None,
        "Matryoshka: also apply the loss to the first d dimensions of the embeddings, for each d of this "
        "strictly decreasing list (null: off).",
    )

    #: the METHOD_SCOPED_KEYS this method reads
    uses: typing.ClassVar[tuple[str, ...]] = ()

    def check(self, cfg: TrainConfig) -> None:
        """The method's rules on other sections (e.g. a pooler it needs); run by ``sentcl.validation``."""

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

    @classmethod
    def resolve_class(cls, data: dict[str, Any]) -> type[ObjectiveConfig]:
        """The options class of the method the section names (``sentcl.typed_config.from_dict``'s hook)."""
        return objective_options(data.get("name", ObjectiveConfig.name))

    @classmethod
    def unknown_key(cls, key: str, where: str, data: dict[str, Any]) -> ConfigError:
        """``objective.margin is not an option of unsup_simcse; its options: ...``"""
        method = data.get("name", "unsup_simcse")
        base = [f.name for f in dataclasses.fields(ObjectiveConfig)]
        own = [f.name for f in dataclasses.fields(cls) if f.name not in base]
        owners = [
            m for m, c in objective_option_classes().items() if key in {f.name for f in dataclasses.fields(c)}
        ]
        of = f" (it is an option of {', '.join(owners)})" if owners else ""
        options = ", ".join([base[0], *own, *base[1:]])
        return ConfigError(
            f"{where or 'objective'}.{key} is not an option of {method}{of}; its options: {options}"
        )

    @classmethod
    def describe_fields(cls, prefix: str) -> list[tuple[str, str, str]]:
        """The base options' rows, then each method's own options, marked ``[method]``."""
        rows = describe_fields(ObjectiveConfig, prefix)
        base = {f.name for f in dataclasses.fields(ObjectiveConfig)}
        for method, options in objective_option_classes().items():
            rows.extend(
                (k, d, f"[{method}] {h}")
                for k, d, h in describe_fields(options, prefix)
                if k.rsplit(".", 1)[-1] not in base
            )
        return rows


def objective_options(name: Any) -> type[ObjectiveConfig]:
    """The options class of method ``name`` (``objective.name``)."""
    from sentcl.methods import method_spec  # importing the methods registers their options classes

    if not isinstance(name, str):
        from sentcl.methods import METHODS

        raise ConfigError(f"objective.name: unknown method {name!r}; valid: {', '.join(METHODS.names())}")
    return method_spec(name).options


def objective_option_classes() -> dict[str, type[ObjectiveConfig]]:
    """Method name -> its options class, for every registered method."""
    from sentcl.methods import METHODS

    return {name: METHODS.build(name).options for name in METHODS.names()}


def method_scoped_keys() -> list[str]:
    """METHOD_SCOPED_KEYS and every other key a method lists in its options' ``uses`` (e.g. a data file only
    that method reads)."""
    classes = objective_option_classes().values()
    return list(dict.fromkeys([*METHOD_SCOPED_KEYS, *(key for c in classes for key in c.uses)]))


def default_objective() -> ObjectiveConfig:
    return objective_options("unsup_simcse")()


def drop_other_methods_settings(data: dict[str, Any], name: Any) -> None:
    """An override that switches the recipe to method ``name`` leaves the recipe's settings of its own method
    behind: its objective options that ``name`` lacks and the METHOD_SCOPED_KEYS that ``name`` does not use.
    (The overrides themselves are applied afterwards, so a foreign option set by one is still an error.)"""
    objective = data.get("objective")
    objective = objective if isinstance(objective, dict) else {}
    if objective.get("name", ObjectiveConfig.name) == name:
        return
    options = objective_options(name)
    fields = {f.name for f in dataclasses.fields(options)}
    if objective:
        data["objective"] = {k: v for k, v in objective.items() if k in fields}
    for dotted in method_scoped_keys():
        section, key = dotted.split(".")
        if dotted not in options.uses and isinstance(data.get(section), dict):
            data[section].pop(key, None)
