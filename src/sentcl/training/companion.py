"""The companion hook: state a method keeps beside the model across steps (e.g. ESimCSE's momentum encoder
and queue of past embeddings).

The loop calls ``objective_inputs`` before the objective (its tensors join the batch's metadata as keyword
arguments, computed without a graph), ``after_step`` after the optimizer step, and saves ``state_dict()`` in
``training_state.pt`` so that ``--resume`` continues exactly (tensors and plain values only: the file is read
with ``weights_only=True``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from torch import Tensor, nn


@runtime_checkable
class Companion(Protocol):
    def objective_inputs(
        self, model: nn.Module, batch: dict[str, Tensor], num_examples: int
    ) -> dict[str, Tensor]:
        """Extra keyword tensors for the objective, computed without a graph (e.g. queue=(Q, D))."""
        ...

    def after_step(self, model: nn.Module) -> None:
        """After the optimizer step (e.g. momentum update, enqueue)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly: tensors and plain values only."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...
