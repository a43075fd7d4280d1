"""Evaluation: STS (SentEval's protocol as SimCSE runs it), transfer, the user's own sets; ``runner`` names them.

The names below are imported on first use: a light submodule (``user_data``'s options, ``dimensions``'
parser) is imported without SciPy or the evaluation code (``sentcl --help`` answers at once).
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the submodule that defines it
_HOMES = {
    "STS_TASKS": "senteval_readers",
    "load_sts_task": "senteval_readers",
    "aggregate": "sts",
    "evaluate_sts": "sts",
    "evaluate_sts_dev": "sts",
    "format_sts_table": "sts",
    "main_score": "sts",
    "write_json": "sts",
    "EncodeFn": "sentcl.types",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'sentcl.evaluation' has no attribute {name!r}")
    module = importlib.import_module(home if "." in home else f"sentcl.evaluation.{home}")
    return getattr(module, name)


__all__ = sorted(_HOMES)
