"""The recipe, torch-free: typed sections, loading from YAML and ``key=value`` overrides, method options.

``from sentcl.config import TrainConfig, load_config`` is the face; the modules below hold the parts:
:mod:`~sentcl.config.sections` (the dataclasses), :mod:`~sentcl.config.load` (YAML + overrides, the keys that
carry a rule), :mod:`~sentcl.config.typed` (the generic dataclass <-> dict machinery),
:mod:`~sentcl.config.objective` (the options every method shares), :mod:`~sentcl.config.teacher`,
:mod:`~sentcl.config.poolers`, :mod:`~sentcl.config.prompt_templates`, :mod:`~sentcl.config.names` (task and
dev-task names), :mod:`~sentcl.config.builtin` (the recipes shipped in the wheel). Nothing here imports torch
(litgpt's ``config.py`` keeps the same promise, for the same reason: a recipe can be read anywhere).
"""

from __future__ import annotations

from sentcl.config.eval_section import EvalConfig, check_dev_task_name
from sentcl.config.load import (
    changed_settings,
    describe,
    drop_other_methods_settings,
    flagged_keys,
    load_config,
    method_scoped_keys,
    objective_option_classes,
    resume_safe_keys,
)
from sentcl.config.method_catalogue import objective_options
from sentcl.config.objective import AUGMENTATION_KEYS, ObjectiveConfig
from sentcl.config.sections import (
    SEED_MAX,
    DataConfig,
    ModelConfig,
    TrainConfig,
    TrainingConfig,
)
from sentcl.config.typed import (
    ConfigError,
    check_choice,
    check_positive,
    flatten,
    from_dict,
    merge_override,
    opt,
    parse_override,
    to_dict,
)

__all__ = [
    "AUGMENTATION_KEYS",
    "SEED_MAX",
    "ConfigError",
    "DataConfig",
    "EvalConfig",
    "ModelConfig",
    "ObjectiveConfig",
    "TrainConfig",
    "TrainingConfig",
    "changed_settings",
    "check_choice",
    "check_dev_task_name",
    "check_positive",
    "describe",
    "drop_other_methods_settings",
    "flagged_keys",
    "flatten",
    "from_dict",
    "load_config",
    "merge_override",
    "method_scoped_keys",
    "objective_option_classes",
    "objective_options",
    "opt",
    "parse_override",
    "resume_safe_keys",
    "to_dict",
]
