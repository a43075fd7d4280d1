"""Which k of the teacher's L layers a layer student keeps: each subset cut from the teacher, untrained, scored.

The subsets keep the teacher's last layer (on all-MiniLM-L6-v2 the best bare 3-layer cuts keep it:
STS-B dev [0, 3, 5] 84.21 and [0, 4, 5] 84.09 in bench/results/layer_choice.json, against 73.81 for
[0, 2, 4] in the recipe distill_minilm_l3)
and choose the other k - 1 among the first L - 1; past ``MAX_SUBSETS`` of them, that many
spread evenly over the sorted list. Each is cut as ``model.student_layers`` cuts it
(``sentcl.modeling.student.keep_layers``) and scored by the caller's measure on the user's evaluation data;
the best is the student's start.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

MAX_SUBSETS = 12


def layer_subsets(layers: int, keep: int) -> list[list[int]]:
    """The subsets of ``keep`` of ``layers`` layers that the choice scores (module docstring)."""
    if not 1 <= keep < layers:
        raise ValueError(f"a layer student keeps 1 to {layers - 1} of {layers} layers, not {keep}")
    every = [[*rest, layers - 1] for rest in itertools.combinations(range(layers - 1), keep - 1)]
    if len(every) <= MAX_SUBSETS:
        return every
    step = (len(every) - 1) / (MAX_SUBSETS - 1)
    return [every[round(i * step)] for i in range(MAX_SUBSETS)]


def choose_layers(
    teacher: str, keep: int, score: Callable[[Any], float], layers: int
) -> tuple[list[int], list[dict[str, Any]]]:
    """The best-scoring subset of ``keep`` layers, and every subset's score (``score(encoder)``: higher is
    better) in the order scored."""
    from sentcl.modeling.open import open_model
    from sentcl.modeling.student import keep_layers

    rows = []
    for subset in layer_subsets(layers, keep):
        encoder = open_model(teacher, needs_torch="shrinking (a student of some of its layers)")
        keep_layers(encoder.backbone, subset, teacher)
        rows.append({"layers": subset, "score": float(score(encoder.eval()))})
    best = max(rows, key=lambda r: r["score"])  # the first of equal scores: fewer early layers
    return best["layers"], rows


__all__ = ["MAX_SUBSETS", "choose_layers", "layer_subsets"]
