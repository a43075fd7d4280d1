"""``model.teacher``: the teachers of a distillation method, read from a recipe. Torch-free.

A recipe names one teacher (a string), several (a list of strings), or several with settings (a list of
mappings ``{path, weight, pooler, max_length}``); each becomes a :class:`TeacherConfig`. A teacher is any
model folder sentcl opens (``sentcl.modeling.open_model``): a sentcl folder, a sentence-transformers folder, a
plain Hugging Face folder with a pooler, an exported ONNX folder, or an offline short name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sentcl.config.poolers import POOLERS
from sentcl.config.typed import ConfigError, check_choice, check_max_length, check_positive, from_dict, opt
from sentcl.files.read import preview


@dataclass
class TeacherConfig:
    """One teacher: where it is, its weight among the teachers, and how it encodes."""

    path: str = opt("", "The teacher: a model folder (any kind sentcl opens), hub id or offline short name.")
    weight: float = opt(1.0, "Its weight among the teachers (> 0; the weights are normalised to sum to 1).")
    pooler: str | None = opt(None, "Its pooler; null: the folder's own.")
    max_length: int | None = opt(None, "Its truncation in tokens; null: the folder's inference truncation.")

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path.strip():
            raise ConfigError(f"model.teacher: path must name a model, got {preview(self.path)}")
        check_positive("model.teacher.weight", self.weight)
        if self.pooler is not None:
            check_choice("model.teacher.pooler", self.pooler, POOLERS)
        check_max_length("model.teacher.max_length", self.max_length, allow_none=True)


def _one(item: Any, name: str) -> TeacherConfig:
    if isinstance(item, TeacherConfig):
        return item
    if isinstance(item, str):
        return TeacherConfig(path=item)
    if isinstance(item, dict):
        if "path" not in item:
            raise ConfigError(f"{name}.path is missing: each teacher mapping names its model with path:")
        return from_dict(TeacherConfig, item, name)
    raise ConfigError(
        f"{name}={preview(item)} must be a model name or a mapping {{path, weight, pooler, max_length}}"
    )


def parse_teachers(value: Any, name: str = "model.teacher") -> list[TeacherConfig] | None:
    """A string, a list of strings, or a list of mappings -> one TeacherConfig per teacher (None: none)."""
    if value is None:
        return None
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError(f"{name} is an empty list; name a teacher or leave {name} out (null)")
    return [_one(item, f"{name}[{i}]") for i, item in enumerate(items)]


__all__ = ["TeacherConfig", "parse_teachers"]
