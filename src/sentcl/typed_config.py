"""Dataclasses <-> nested dicts: fields with a help line, type-checked building, dotted keys and overrides.

Nothing here knows sentcl's sections (those live in :mod:`sentcl.config`). Two optional class hooks let a
section pick its own class from its data and word its own unknown-key error:

- ``resolve_class(data: dict) -> type``: the dataclass to build a section of this annotation (e.g. the chosen
  method's options class for ``objective:``);
- ``unknown_key(key, where, data) -> ConfigError``: the error for a key the class does not have;
- ``describe_fields(prefix) -> rows``: its rows in :func:`describe_fields` (e.g. every method's options).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import field
from typing import Any, Literal, TypeVar, get_args, get_origin

import yaml

T = TypeVar("T")


def opt(default: Any, help: str, **kw: Any) -> Any:  # noqa: A002 - mirrors argparse
    """A dataclass field with a help line."""
    if isinstance(default, list | dict):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


class ConfigError(ValueError):
    """A configuration key or value is invalid."""


def check_choice(name: str, value: Any, valid: typing.Iterable[Any]) -> None:
    valid = list(valid)
    if value not in valid:
        raise ConfigError(f"{name}={value!r} is not valid; choose one of: {', '.join(map(str, valid))}")


def check_positive(name: str, value: float | int | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{name}={value!r} is not a finite number")
    if value is None or value <= 0:
        raise ConfigError(f"{name} must be positive, got {value!r}")


def _type_ok(value: Any, annotation: Any) -> bool:
    origin = get_origin(annotation)
    if annotation is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in get_args(annotation))
    if annotation is type(None):
        return value is None
    if origin is Literal:
        return value in get_args(annotation)
    if origin is list:
        (inner,) = get_args(annotation) or (Any,)
        return isinstance(value, list) and all(_type_ok(v, inner) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, annotation)


def _coerce(value: Any, annotation: Any) -> Any:
    """An int where a float (or float | None) is expected becomes a float."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    origin = get_origin(annotation)
    float_ok = annotation is float or (
        origin in (typing.Union, types.UnionType) and float in get_args(annotation)
    )
    return float(value) if is_int and float_ok else value


def _float_from_text(value: Any, annotation: Any) -> Any:
    """Text that ``float()`` reads, where a float is expected, becomes that float: YAML 1.1 reads ``1e-5``
    (no dot) as a string."""
    if not isinstance(value, str) or not _type_ok(0.5, annotation) or _type_ok(value, annotation):
        return value
    try:
        return float(value)
    except ValueError:
        return value


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def from_dict(cls: type[T], data: dict[str, Any], where: str = "") -> T:
    """Build dataclass ``cls`` from nested dicts; unknown keys and wrong types are ConfigErrors."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'} must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{where}.{key}" if where else key
        if key not in fields and hasattr(cls, "unknown_key"):
            raise cls.unknown_key(key, where, data)  # type: ignore[attr-defined]
        if key not in fields:
            raise ConfigError(f"unknown config key {name!r}; valid keys here: {', '.join(fields)}")
        annotation = hints[key]
        if hasattr(annotation, "resolve_class"):  # e.g. the chosen method's options class
            annotation = annotation.resolve_class(value if isinstance(value, dict) else {})
        if dataclasses.is_dataclass(annotation):
            kwargs[key] = from_dict(annotation, value or {}, name)  # type: ignore[arg-type]
            continue
        value = _float_from_text(value, annotation)
        if not _type_ok(value, annotation):
            raise ConfigError(f"{name}={value!r} has the wrong type; expected {_type_name(annotation)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{name}={value!r} is not a finite number")
        kwargs[key] = _coerce(value, annotation)
    return cls(**kwargs)


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def flatten(data: typing.Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict as dotted keys: ``{"training": {"seed": 1}}`` -> ``{"training.seed": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, typing.Mapping):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def parse_override(text: str) -> tuple[list[str], Any]:
    """``'training.batch_size=32'`` -> (['training', 'batch_size'], 32); the value is parsed as YAML."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like section.key=value")
    key, raw = text.split("=", 1)
    value = yaml.safe_load(raw) if raw.strip() else None
    return key.strip().split("."), value


def merge_override(data: dict[str, Any], keys: list[str], value: Any) -> None:
    node = data
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"cannot set {'.'.join(keys)}: {key} is not a section")
    node[keys[-1]] = value


def describe_fields(cls: type[Any], prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, help) for every leaf field, for --help listings."""
    rows: list[tuple[str, str, str]] = []
    hints = typing.get_type_hints(cls)
    instance = cls()
    for f in dataclasses.fields(cls):
        key, annotation = f"{prefix}{f.name}", hints[f.name]
        if hasattr(annotation, "describe_fields"):
            rows.extend(annotation.describe_fields(key + "."))
        elif dataclasses.is_dataclass(annotation):
            rows.extend(describe_fields(annotation, key + "."))  # type: ignore[arg-type]
        else:
            rows.append((key, repr(getattr(instance, f.name)), f.metadata.get("help", "")))
    return rows
