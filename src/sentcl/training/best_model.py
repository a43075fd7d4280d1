"""``best/``: the run's best model, saved with its model card (README.md).

Gao, Yao & Chen, "SimCSE: Simple Contrastive Learning of Sentence Embeddings" (EMNLP 2021) keep the checkpoint
with the best STS-B development score and report it; sentcl does the same. A better dev score (or, with
``eval_steps: 0``, the last step) replaces ``best/`` whole, through a temporary folder renamed into place
(``checkpoint.write_checkpoint_dir``), so a kill never leaves half a model; after the final evaluation the card
is written again with the results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from sentcl.config import to_dict
from sentcl.modeling.model_card import write_run_card
from sentcl.training.checkpoint import write_checkpoint_dir
from sentcl.training.run import RunSetup, RunState

BEST = "best"


def best_folder(out: Path) -> Path:
    """Where a run folder keeps its best model."""
    return out / BEST


def write_card(
    folder: Path, run: RunSetup, state: RunState, train_examples: int, results: dict[str, Any] | None = None
) -> None:
    """The best model's card (README.md): the recipe, the run's steps and examples, the best step, ``results``
    once the final evaluation ran."""
    write_run_card(
        folder,
        to_dict(run.cfg),
        run.out,
        best_folder(run.out),
        steps=state.global_step,
        train_examples=train_examples,
        best_step=state.best_step,
        results=results,
    )


def keep_best(model: nn.Module, run: RunSetup, state: RunState, train_examples: int) -> None:
    """Save ``model`` as the run's ``best/`` (weights and card), replacing the one kept before, atomically."""

    def save(folder: Path) -> None:
        model.save_pretrained(folder)  # type: ignore[operator]
        write_card(folder, run, state, train_examples)

    write_checkpoint_dir(best_folder(run.out), save)
