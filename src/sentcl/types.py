"""Types shared across packages (one definition each)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

EncodeFn = Callable[[list[str]], np.ndarray]
"""sentences -> embeddings (N, D): what every evaluator, the MTEB adapter and retrieval take."""

__all__ = ["EncodeFn"]
