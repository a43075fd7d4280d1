"""Dataclasses <-> nested dicts: fields with a help line, type-checked building, dotted keys and overrides.

Nothing here knows sentcl's sections (those live in :mod:`sentcl.config`). A field's metadata carries its
facts: ``help`` (the --help line), flags read by other checks (e.g. ``method_scoped``, ``resume_safe``), and
optional hooks by which a section field picks its own class from its data and words its own errors:

- ``resolve_class(data: dict) -> type``: the dataclass to build the section from (e.g. the chosen method's
  options class for ``objective:``);
- ``unknown_key(key, where, data) -> ConfigError``: the error for a key that class does not have;
- ``describe(prefix) -> rows``: the section's rows in :func:`describe_fields` (e.g. every method's options);
- ``parse(value, name) -> value``: a leaf field that reads its own value (e.g. ``model.teacher``: one name, a
  list of names, or a list of mappings built as dataclasses), raising ConfigError naming ``name``.

Every value echoed in an error is cut to a short preview (``sentcl.files.read.preview``).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import field
from typing import Any, Literal, TypeVar, get_args, get_origin

from sentcl.defaults import MIN_MAX_LENGTH
from sentcl.files.read import YAML_11_MARK, load_yaml_text, preview

T = TypeVar("T")


def opt(default: Any, help: str, **flags: Any) -> Any:  # noqa: A002 - mirrors argparse
    """A dataclass field with a help line; ``flags`` go to its metadata (e.g. ``resume_safe=True``)."""
    metadata = {"help": help, **flags}
    if isinstance(default, list | dict):
        return field(default_factory=lambda: type(default)(default), metadata=metadata)
    return field(default=default, metadata=metadata)


class ConfigError(ValueError):
    """A configuration key or value is invalid."""


def check_choice(name: str, value: Any, valid: typing.Iterable[Any]) -> None:
    valid = list(valid)
    if not isinstance(value, typing.Hashable) or value not in valid:
        raise ConfigError(
            f"{name}={preview(value)} is not valid; choose one of: {', '.join(map(str, valid))}"
        )


def check_positive(name: str, value: float | int | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{name}={value!r} is not a finite number")
    if value is None or value <= 0:
        raise ConfigError(f"{name} must be positive, got {preview(value)}")


def check_max_length(name: str, value: int | None, allow_none: bool = False) -> None:
    """A truncation in tokens: at least ``MIN_MAX_LENGTH`` (3: [CLS], one real token, [SEP]). 2 gives every sentence
    the same vector; 1 cannot hold [CLS] and [SEP], so the tokenizer does not truncate at all."""
    if value is None and allow_none:
        return
    check_positive(name, value)
    assert value is not None
    if value < MIN_MAX_LENGTH:
        raise ConfigError(
            f"{name}={value} leaves no room for a real token besides [CLS] and [SEP]: use {MIN_MAX_LENGTH} or more"
        )


def check_non_negative(name: str, value: float) -> None:
    """``name`` >= 0 (a weight, a margin)."""
    if value < 0:
        raise ConfigError(f"{name} must be >= 0, got {value!r}")


def check_in_unit(name: str, value: float, closed: bool = False) -> None:
    """``value`` in [0, 1) (or [0, 1] with ``closed``): a rate or a fraction."""
    if not (0.0 <= value <= 1.0 if closed else 0.0 <= value < 1.0):
        raise ConfigError(f"{name} must be in [0, 1{']' if closed else ')'}, got {value!r}")


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


class RawText(str):
    """A ``--set`` value given as text: YAML could not read it (``[1``, ``a : b``; ``problem`` says why), or it
    read as a string (``problem`` None). Kept until the field's type is known: a string field takes it as
    written, a list-of-strings field as its one item (``--set model.prompt_templates=...``); any other field
    gets the ordinary type check, or, for text YAML could not read, an error saying how to quote it."""

    problem: str | None

    def __new__(cls, text: str, problem: str | None = None) -> RawText:
        self = super().__new__(cls, text)
        self.problem = problem
        return self

    @property
    def text(self) -> str:
        return str.__str__(self)

    def resolve(self, annotation: Any, name: str) -> Any:
        if _type_ok(self.text, annotation):
            return self.text
        if _type_ok([self.text], annotation):  # a list of strings: this one string
            return [self.text]
        if self.problem is None:
            return self.text
        raise ConfigError(
            f"--set {name}={preview(self.text)}: the value is not valid YAML ({self.problem}); write a value of type "
            f"{_type_name(annotation)} (quote text with single quotes inside the argument: "
            f"--set \"{name}='...'\")"
        )


def _section(value: Any, name: str) -> dict[str, Any]:
    """A section's data: a mapping; null (or absent) means all defaults; anything else is an error."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        shown = value.text if isinstance(value, RawText) else value
        raise ConfigError(
            f"{name} must be a mapping of its settings (null or absent: the defaults), got "
            f"{'str' if isinstance(value, str) else type(value).__name__} {preview(shown)}"
        )
    return value


def _leaf(value: Any, annotation: Any, name: str) -> Any:
    """A leaf value checked against its field's annotation (ints become floats where floats are expected)."""
    if isinstance(value, RawText):
        value = value.resolve(annotation, name)
    value = _float_from_text(value, annotation)
    if not _type_ok(value, annotation):
        raise ConfigError(f"{name}={preview(value)} has the wrong type; expected {_type_name(annotation)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{name}={value!r} is not a finite number")
    return _coerce(value, annotation)


def from_dict(
    cls: type[T],
    data: dict[str, Any],
    where: str = "",
    unknown_key: typing.Callable[..., Exception] | None = None,
) -> T:
    """Build dataclass ``cls`` from nested dicts; unknown keys, wrong types and sections that are not
    mappings are ConfigErrors. ``unknown_key``: the section field's own hook for a key ``cls`` lacks."""
    data = _section(data, where or "config")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{where}.{key}" if where else str(key)
        if key not in fields and unknown_key is not None:
            raise unknown_key(key, where, data)
        if key not in fields:
            raise ConfigError(f"unknown config key {preview(name)}; valid keys here: {', '.join(fields)}")
        annotation, meta = hints[key], fields[key].metadata
        if "resolve_class" in meta:  # e.g. the chosen method's options class
            annotation = meta["resolve_class"](value if isinstance(value, dict) else {})
        if dataclasses.is_dataclass(annotation):
            kwargs[key] = from_dict(annotation, _section(value, name), name, meta.get("unknown_key"))  # type: ignore[arg-type]
        elif "parse" in meta:  # the field reads its own value (e.g. a list of mappings)
            kwargs[key] = meta["parse"](value.text if isinstance(value, RawText) else value, name)
        else:
            kwargs[key] = _leaf(value, annotation, name)
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
    """``'training.batch_size=32'`` -> (['training', 'batch_size'], 32); the value is read as YAML (the same
    reader as files: no duplicate keys, bounded aliases). Text YAML cannot read becomes ``RawText``, which a
    string field takes as written."""
    if "=" not in text:
        raise ConfigError(f"override {preview(text)} must look like section.key=value")
    key, raw = text.split("=", 1)
    bad = next((i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF), None)
    if bad is not None:  # argv's bytes that are not UTF-8 (surrogate-escaped), or a lone surrogate
        raise ConfigError(
            f"--set {preview(key.strip())}: the value holds bytes that are not UTF-8 text (at character {bad})"
        )
    if not raw.strip():
        return key.strip().split("."), None
    try:
        value = load_yaml_text(raw, f"--set {key.strip()}", ConfigError)
    except ConfigError as err:
        refusals = ("alias", "duplicate key", "nested too deeply", YAML_11_MARK)
        if any(phrase in str(err) for phrase in refusals):
            raise
        return key.strip().split("."), RawText(raw, str(err).split(": ", 1)[-1].splitlines()[0])
    return key.strip().split("."), RawText(value) if isinstance(value, str) else value


def merge_override(data: dict[str, Any], keys: list[str], value: Any) -> None:
    node = data
    for depth, key in enumerate(keys[:-1], start=1):
        if node.get(key) is None:  # absent, or a section written as null (its defaults)
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            section = ".".join(keys[:depth])
            raise ConfigError(
                f"cannot set {'.'.join(keys)}: {section} must be a mapping of its settings (null or absent: the "
                f"defaults), got {type(node).__name__} {preview(node)}"
            )
    node[keys[-1]] = value


def describe_fields(cls: type[Any], prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, help) for every leaf field, for --help listings."""
    rows: list[tuple[str, str, str]] = []
    hints = typing.get_type_hints(cls)
    instance = cls()
    for f in dataclasses.fields(cls):
        key, annotation = f"{prefix}{f.name}", hints[f.name]
        if "describe" in f.metadata:
            rows.extend(f.metadata["describe"](key + "."))
        elif dataclasses.is_dataclass(annotation):
            rows.extend(describe_fields(annotation, key + "."))  # type: ignore[arg-type]
        else:
            rows.append((key, repr(getattr(instance, f.name)), f.metadata.get("help", "")))
    return rows
