"""The catalogue of methods, torch-free: one registration line per method, and the questions the recipe asks.

A method lives in its own package ``sentcl/methods/<name>/``: ``options.py`` (its options class and its
``RECORD``, torch-free), ``build.py`` (``build(cfg, options, corpus, tokenizer) -> Method``), usually
``loss.py`` (its objective). Adding one is its package plus one import line below. Reading a recipe
imports the options modules only, never a method's torch code (litgpt's ``config.py`` keeps the same promise).
"""

from __future__ import annotations

import dataclasses
from typing import Any

# ---- the catalogue: one line per method (importing its options module registers its RECORD)
import sentcl.methods.arccse.options  # noqa: F401
import sentcl.methods.contrastive_tension.options  # noqa: F401
import sentcl.methods.cosent.options  # noqa: F401
import sentcl.methods.cutoff_triplet.options  # noqa: F401
import sentcl.methods.diffcse.options  # noqa: F401
import sentcl.methods.distill_kl.options  # noqa: F401
import sentcl.methods.distill_mse.options  # noqa: F401
import sentcl.methods.esimcse.options  # noqa: F401
import sentcl.methods.mixcse.options  # noqa: F401
import sentcl.methods.next_sentence.options  # noqa: F401
import sentcl.methods.promptbert.options  # noqa: F401
import sentcl.methods.quick_thoughts.options  # noqa: F401
import sentcl.methods.rankcse.options  # noqa: F401
import sentcl.methods.sncse.options  # noqa: F401
import sentcl.methods.sup_pairs.options  # noqa: F401
import sentcl.methods.sup_simcse.options  # noqa: F401
import sentcl.methods.tsdae.options  # noqa: F401
import sentcl.methods.unsup_simcse.options  # noqa: F401
from sentcl.config.method_record import METHODS, MethodRecord
from sentcl.config.objective import ObjectiveConfig
from sentcl.config.typed import ConfigError, describe_fields
from sentcl.files.read import cut, preview


def method_record(name: object) -> MethodRecord:
    """The record of method ``name``; an unknown name (or a non-string) lists the valid ones."""
    if not isinstance(name, str) or name not in METHODS:
        raise KeyError(f"unknown method {preview(name)}; valid: {', '.join(METHODS.names())}")
    return METHODS.build(name)


def option_classes() -> dict[str, type[ObjectiveConfig]]:
    """Method name -> its options class, for every registered method."""
    return {name: METHODS.build(name).options for name in METHODS.names()}


def objective_options(name: object) -> type[ObjectiveConfig]:
    """The options class of method ``name`` (``objective.name``); an unknown name is a ConfigError."""
    try:
        return method_record(name).options
    except KeyError as err:
        raise ConfigError(f"objective.name: {err.args[0]}") from None


def unknown_objective_key(key: str, data: dict[str, Any]) -> ConfigError:
    """``objective.margin is not an option of unsup_simcse (it is an option of cutoff_triplet); its options: ...``"""
    method = data.get("name", ObjectiveConfig.name)
    base = [f.name for f in dataclasses.fields(ObjectiveConfig)]
    own = [f.name for f in dataclasses.fields(objective_options(method)) if f.name not in base]
    owners = [m for m, c in option_classes().items() if key in {f.name for f in dataclasses.fields(c)}]
    of = f" (it is an option of {', '.join(owners)})" if owners else ""
    options = ", ".join([base[0], *own, *base[1:]])
    return ConfigError(f"objective.{cut(key)} is not an option of {method}{of}; its options: {options}")


def describe_objective(prefix: str) -> list[tuple[str, str, str]]:
    """--help rows of ``objective:``: the base options, then each method's own options, marked ``[method]``."""
    rows = describe_fields(ObjectiveConfig, prefix)
    base = {f.name for f in dataclasses.fields(ObjectiveConfig)}
    for method, options in option_classes().items():
        rows.extend(
            (k, d, f"[{method}] {h}")
            for k, d, h in describe_fields(options, prefix)
            if k.rsplit(".", 1)[-1] not in base
        )
    return rows
