"""A static student's recipe (``sentcl distill-static --config NAME``): its settings, read without torch.

The values live in one file, the built-in recipe ``distill_static`` (``sentcl/recipes/static/distill_static.yaml``,
``sentcl recipes show distill_static``). A user's recipe file and ``--set key=value`` change some of them; what
they leave out keeps the built-in value, so the dataclasses here hold no values of their own (only ``None``
for the settings that are off). ``load_static_recipe`` reads the built-in file, the user's file over it, then
the overrides; an unknown key or a wrong type is a ``ConfigError`` naming the key and the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sentcl.config.builtin import prefer, static_recipe_path
from sentcl.config.typed import ConfigError, from_dict, merge_override, parse_override
from sentcl.files.read import read_yaml
from sentcl.files.slots import FolderOwn, FolderRead, ModelRef

LOSSES = ("cosine", "mse")
WEIGHTINGS = ("zipf", "corpus", "none")
#: the student's form: ``mean`` (one table, a mean of rows) or ``weights`` (the mean's weights from a small
#: attention over the rows: ``sentcl.methods.static_weights``)
HEADS = ("mean", "weights")
BUILTIN = "distill_static"


@dataclass(frozen=True)
class FitSettings:
    """The fit of the table to the teacher's sentence vectors (``sentcl.methods.static_fit``); 0 steps: none."""

    steps: int
    batch_size: int
    learning_rate: float
    warmup_steps: int
    loss: str
    contrastive_weight: float
    temperature: float
    center: bool
    seed: int
    log_every: int
    #: the student's width when narrower than the distilled table (the map is then k x dim); set from the recipe
    dim: int | None = None

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise ConfigError(f"fit.loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        if self.steps < 0:
            raise ConfigError(f"fit.steps must be 0 (no fit) or positive, got {self.steps}")
        for name in ("batch_size", "log_every"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"fit.{name} must be positive, got {getattr(self, name)}")
        if self.dim is not None and self.dim <= 0:
            raise ConfigError(f"fit.dim must be positive, got {self.dim}")
        if self.learning_rate <= 0 or self.temperature <= 0 or self.contrastive_weight < 0:
            raise ConfigError(
                "fit.learning_rate and fit.temperature must be positive, fit.contrastive_weight >= 0"
            )


@dataclass(frozen=True)
class StaticRecipe:
    """Every setting of a static student (``sentcl.methods.static_student.build_static_student``)."""

    teacher: ModelRef
    output_dir: FolderOwn
    dim: int
    weighting: str
    sif_a: float
    fit: FitSettings
    #: common components removed from the table after the fit: the corpus sentence vectors' mean and their top
    #: ``components`` principal directions (``sentcl.methods.static_components``); 0: the table as fitted
    components: int
    #: the form (``HEADS``); the ``weights`` head's attention heads and each one's query/key width
    head: str
    attention_heads: int
    attention_dim: int
    #: the width of the distillation's PCA; wider than ``dim``, the learned map chooses the student's axes
    pca_dim: int | None = None
    skip_pattern: str | None = None
    max_sentences: int | None = None
    teacher_cache: FolderRead | None = None

    def __post_init__(self) -> None:
        if self.head not in HEADS:
            raise ConfigError(f"head must be one of {', '.join(HEADS)}, got {self.head!r}")
        if self.head == "weights" and self.fit.steps == 0:
            raise ConfigError("head: weights is learned by the fit: it needs fit.steps > 0")
        for name in ("attention_heads", "attention_dim"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.weighting not in WEIGHTINGS:
            raise ConfigError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {self.weighting!r}")
        if self.dim <= 0:
            raise ConfigError(f"dim must be positive, got {self.dim}")
        if self.pca_dim is not None and self.pca_dim < self.dim:
            raise ConfigError(f"pca_dim must be at least dim ({self.dim}), got {self.pca_dim}")
        if self.pca_dim is not None and self.fit.steps == 0 and self.pca_dim != self.dim:
            raise ConfigError(
                "pca_dim wider than dim needs the fit (its map narrows the table): fit.steps > 0"
            )
        if self.max_sentences is not None and self.max_sentences <= 0:
            raise ConfigError(f"max_sentences must be positive, got {self.max_sentences}")
        if not 0 <= self.components < self.dim:
            raise ConfigError(f"components must be from 0 to dim - 1 ({self.dim - 1}), got {self.components}")
        if self.sif_a <= 0:
            raise ConfigError(f"sif_a must be positive, got {self.sif_a}")
        if self.skip_pattern is not None:
            try:
                re.compile(self.skip_pattern)
            except re.error as err:
                raise ConfigError(f"skip_pattern: not a regular expression: {err}") from None

    @property
    def fitted(self) -> bool:
        return self.fit.steps > 0


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over``'s keys over ``base``'s, section by section."""
    out = dict(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(base.get(key), dict)
        out[key] = _merged(base[key], value) if both else value
    return out


def _mapping(path: Path) -> dict[str, Any]:
    data = read_yaml(path, "static recipe", ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"static recipe {path} must be a mapping of settings, got a {type(data).__name__}")
    return data


def load_static_recipe(path: str | Path | None = None, overrides: Sequence[str] = ()) -> StaticRecipe:
    """The built-in ``distill_static``, then the file ``path`` (a path, or a built-in static recipe's name)
    over it, then each ``key=value`` override."""
    builtin = static_recipe_path(BUILTIN)
    if builtin is None:
        raise ConfigError(f"the built-in static recipe {BUILTIN} is missing from this installation")
    data = _mapping(builtin)
    source = builtin
    if path is not None:
        given = Path(path)
        named = static_recipe_path(str(path))
        source = prefer(path, given, named) if os.path.lexists(given) else (named or given)
        if not source.exists():
            raise ConfigError(f"{path}: no such file, and no built-in static recipe of that name")
        data = _merged(data, _mapping(source))
    given = []
    for text in overrides:
        keys, value = parse_override(text)
        merge_override(data, keys, value)
        given.append(".".join(keys))
    try:
        return from_dict(StaticRecipe, data)
    except ConfigError as err:
        named = [key for key in given if str(err).startswith((f"{key} ", f"{key}=", f"{key}:", f"'{key}'"))]
        named += [key for key in given if f"'{key}'" in str(err) or f" {key} " in f" {err} "]
        where = f"from --set {named[-1]}" if named else f"in {source}"
        raise ConfigError(f"{err} ({where})") from None


__all__ = ["BUILTIN", "HEADS", "LOSSES", "WEIGHTINGS", "FitSettings", "StaticRecipe", "load_static_recipe"]
