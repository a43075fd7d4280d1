"""Choosing the best checkpoint without labels: ``eval.unlabelled_file`` and ``eval.unlabelled_measure``.

With no dev set, a run scores each evaluated checkpoint by one label-free measure on a seeded sample of the
user's unlabelled text (``sentcl.evaluation.labelfree.corpus``) and keeps the best one in ``best/``, as it does
with a dev score: the measure signed so that higher is better (``UNLABELLED_MEASURES`` gives each direction).
The default measure is the one whose rank correlation with the seven-task STS average was highest in
docs/results/labelfree-cpu.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sentcl.config.unlabelled import UNLABELLED_MEASURES
from sentcl.evaluation.labelfree.corpus import read_unlabelled
from sentcl.evaluation.labelfree.report import measure, model_views
from sentcl.evaluation.runner import user_data_path


class UnlabelledDev:
    """The label-free dev score of a run: ``measure`` of the model on the sentences of ``file``."""

    def __init__(
        self, file: str, measure_name: str, sample: int, data_dir: Path | None, batch_size: int
    ) -> None:
        if measure_name not in UNLABELLED_MEASURES:
            raise ValueError(
                f"eval.unlabelled_measure={measure_name!r}; choose from {', '.join(UNLABELLED_MEASURES)}"
            )
        self.text = read_unlabelled(user_data_path(file, data_dir), sample)
        self.measure, self.batch_size = measure_name, batch_size

    @property
    def name(self) -> str:
        """The name of the score in the run's metrics and log."""
        return f"unlabelled_{self.measure}"

    def score(self, model: Any) -> tuple[float, float]:
        """(the measure's value, the score: the value signed so that higher is better)."""
        value = measure(model_views(model, self.text.sentences, self.batch_size), self.measure)
        if value is None:
            raise ValueError(
                f"eval.unlabelled_measure={self.measure} needs the model's dropout and the model has none; "
                "choose another measure"
            )
        return value, value if UNLABELLED_MEASURES[self.measure] == "higher" else -value


def unlabelled_dev(eval_cfg: Any, data_dir: Path | None) -> UnlabelledDev | None:
    """The run's label-free dev score when ``eval.unlabelled_file`` is set (the file read and checked now)."""
    if not eval_cfg.unlabelled_file:
        return None
    return UnlabelledDev(
        eval_cfg.unlabelled_file,
        eval_cfg.unlabelled_measure,
        eval_cfg.unlabelled_sample,
        data_dir,
        eval_cfg.batch_size,
    )
