"""Loading a recipe: a YAML file plus ``key=value`` overrides into a :class:`~sentcl.config.sections.TrainConfig`,
the keys that carry a rule (method-scoped, resume-safe), and the ``--help`` listing of every key. Torch-free."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

from sentcl.config.method_catalogue import objective_options, option_classes
from sentcl.config.objective import ObjectiveConfig
from sentcl.config.sections import TrainConfig
from sentcl.config.typed import (
    ConfigError,
    T,
    describe_fields,
    flatten,
    from_dict,
    merge_override,
    parse_override,
    to_dict,
)
from sentcl.files.read import read_yaml


def flagged_keys(flag: str) -> list[str]:
    """Dotted keys of the fields whose metadata sets ``flag`` (``method_scoped``, ``resume_safe``)."""
    sections = typing.get_type_hints(TrainConfig)
    return [
        f"{name}.{f.name}"
        for name, cls in sections.items()
        for f in dataclasses.fields(cls)
        if f.metadata.get(flag)
    ]


def method_scoped_keys() -> list[str]:
    """Keys of other sections that only some methods read (fields marked ``method_scoped``): a non-default
    value under a method whose options do not list the key in ``uses`` is a ConfigError (sentcl.training.validation)."""
    return flagged_keys("method_scoped")


def resume_safe_keys() -> list[str]:
    """Keys that ``--resume`` may change (fields marked ``resume_safe``): how long to train, what to evaluate
    and report, where things are."""
    return flagged_keys("resume_safe")


def objective_option_classes() -> dict[str, type[ObjectiveConfig]]:
    """Method name -> its options class, for every registered method (sentcl.config.method_catalogue)."""
    return option_classes()


def drop_other_methods_settings(data: dict[str, Any], name: Any) -> None:
    """An override that switches the recipe to method ``name`` leaves the recipe's settings of its own method
    behind: its objective options that ``name`` lacks and the method-scoped keys that ``name`` does not use.
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


def changed_settings(saved: typing.Mapping[str, Any], cfg: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Dotted keys whose value in a saved config (``config.json``'s dict) differs from ``cfg``, as
    key -> (saved value, value now), in the saved file's key order; a key the saved config lacks (a setting
    added to sentcl after the run) counts as its default value. A saved ``objective.*`` key that the method's
    options do not have (runs saved when every method accepted every option) is ignored when it equals the
    default of the method that has it."""
    defaults = TrainConfig(objective=type(cfg.objective)())
    defaults.objective.name = cfg.objective.name
    old = {**flatten(to_dict(defaults)), **flatten(saved)}
    new = flatten(to_dict(cfg))
    if old.get("objective.name") == cfg.objective.name:
        option_defaults = [
            (f"objective.{f.name}", getattr(c(), f.name))
            for c in option_classes().values()
            for f in dataclasses.fields(c)
        ]
        for key in [k for k in old if k.startswith("objective.") and k not in new]:
            if (key, old[key]) in option_defaults:
                del old[key]
    return {k: (old.get(k), new.get(k)) for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)}


def load_config(cls: type[T], path: str | Path | None = None, overrides: typing.Sequence[str] = ()) -> T:
    """Load ``cls`` from a YAML file (optional) and apply ``key=value`` overrides in order. An override of
    ``objective.name`` to another method drops the file's settings of its own method first (any order)."""
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        data = read_yaml(path, "config file", ConfigError)
        if not isinstance(data, dict):
            raise ConfigError(
                f"config file {path} must be a mapping of sections (model:, data:, training:, ...) at the top "
                f"level, got a {type(data).__name__}"
            )
    parsed = [parse_override(text) for text in overrides]
    switched = [value for keys, value in parsed if keys == ["objective", "name"]]
    if cls is TrainConfig and switched:
        drop_other_methods_settings(data, switched[-1])
    for keys, value in parsed:
        merge_override(data, keys, value)
    try:
        return from_dict(cls, data)
    except ConfigError as err:
        raise ConfigError(f"{err}{_source_of(str(err), path, [keys for keys, _ in parsed])}") from None


def _source_of(message: str, path: Path | None, given: list[list[str]]) -> str:
    """Where the value an error names came from: the last ``--set`` of its key (or of a section above it),
    else the recipe file; '' when neither."""
    for keys in reversed(given):
        key = ".".join(keys)
        if message.startswith(key) and message[len(key) : len(key) + 1] in (".", "=", " ", "[", ":"):
            return f" (from --set {key})"
    return f" (in {path})" if path is not None else ""


def describe(cls: type[Any], prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, help) for every leaf field, for --help listings; under TrainConfig, a setting only some
    methods read says which."""
    rows = describe_fields(cls, prefix)
    if cls is TrainConfig:
        users = {
            k: [m for m, c in objective_option_classes().items() if k in c.uses] for k in method_scoped_keys()
        }
        rows = [(k, d, f"{h} [{', '.join(users[k])} only]" if users.get(k) else h) for k, d, h in rows]
    return rows
