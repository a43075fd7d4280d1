"""The catalogue of methods, torch-free: one registration line per method, and the questions the recipe asks.

A method lives in its own package ``sentcl/methods/<name>/``: ``options.py`` (its options class and its
``RECORD``, torch-free), ``build.py`` (``build(cfg, options, corpus, tokenizer) -> Method``), usually
``loss.py`` (its objective). Adding one is its package plus one line in ``_RECORDS`` below. Reading a recipe
imports the options modules only, never a method's torch code (litgpt's ``config.py`` keeps the same promise).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sentcl.config.objective import ObjectiveConfig
from sentcl.config.typed import ConfigError, describe_fields
from sentcl.files.read import cut, preview
from sentcl.methods.arccse.options import RECORD as ARCCSE
from sentcl.methods.cosent.options import RECORD as COSENT
from sentcl.methods.cutoff_triplet.options import RECORD as CUTOFF_TRIPLET
from sentcl.methods.diffcse.options import RECORD as DIFFCSE
from sentcl.methods.distill_kl.options import RECORD as DISTILL_KL
from sentcl.methods.distill_mse.options import RECORD as DISTILL_MSE
from sentcl.methods.esimcse.options import RECORD as ESIMCSE
from sentcl.methods.mixcse.options import RECORD as MIXCSE
from sentcl.methods.next_sentence.options import RECORD as NEXT_SENTENCE
from sentcl.methods.promptbert.options import RECORD as PROMPTBERT
from sentcl.methods.quick_thoughts.options import RECORD as QUICK_THOUGHTS
from sentcl.methods.rankcse.options import RECORD as RANKCSE
from sentcl.methods.record import MethodRecord
from sentcl.methods.sncse.options import RECORD as SNCSE
from sentcl.methods.sup_pairs.options import RECORD as SUP_PAIRS
from sentcl.methods.sup_simcse.options import RECORD as SUP_SIMCSE
from sentcl.methods.unsup_simcse.options import RECORD as UNSUP_SIMCSE
from sentcl.registry import Registry

#: every method sentcl trains, one line each (the order of ``sentcl train --help``)
_RECORDS = (
    UNSUP_SIMCSE,
    SUP_SIMCSE,
    SUP_PAIRS,
    CUTOFF_TRIPLET,
    NEXT_SENTENCE,
    QUICK_THOUGHTS,
    COSENT,
    ESIMCSE,
    MIXCSE,
    ARCCSE,
    PROMPTBERT,
    SNCSE,
    DISTILL_MSE,
    DISTILL_KL,
    RANKCSE,
    DIFFCSE,
)

METHODS: Registry[MethodRecord] = Registry("method")
for _record in _RECORDS:
    METHODS.register(_record.name)(lambda record=_record: record)


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
