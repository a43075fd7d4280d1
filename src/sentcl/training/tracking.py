"""Experiment tracking (``training.report_to``): TensorBoard, Weights & Biases, MLflow, or none.

The loop calls ``log_step`` after every optimizer step (loss and its parts, learning rate, sentences/s of
that step) and ``log_eval`` after every dev evaluation (the dev score, alignment/uniformity when tracked).
Scalars are named ``train/...``, ``eval/...`` and ``geometry/...``. Only rank 0 tracks.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any

from sentcl.config import ConfigError, flatten
from sentcl.extras import extra_hint

REPORT_TO = ("none", "tensorboard", "wandb", "mlflow")
# report_to -> (module that must be importable, the command that installs it)
_REQUIRES = {
    "tensorboard": ("tensorboard", extra_hint("tensorboard")),
    "wandb": ("wandb", "pip install wandb"),
    "mlflow": ("mlflow", "pip install mlflow"),
}
TENSORBOARD_DIR = "tensorboard"


def check_report_to(report_to: str) -> None:
    """ConfigError unless ``report_to`` is known and its library is installed."""
    if report_to not in REPORT_TO:
        raise ConfigError(f"training.report_to={report_to!r} is not valid; choose {', '.join(REPORT_TO)}")
    if report_to in _REQUIRES:
        module, package = _REQUIRES[report_to]
        if importlib.util.find_spec(module) is None:
            raise ConfigError(
                f"training.report_to={report_to} needs the {module!r} package, which is not installed: "
                f"{package}"
            )


def _flatten(tree: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys (``config.flatten``), non-scalar values as text: what mlflow's params take."""
    return {k: v if isinstance(v, int | float | str | bool) else str(v) for k, v in flatten(tree).items()}


class Tracker:
    """Scalars to the chosen backend; ``none`` writes nothing."""

    def __init__(self, report_to: str, run_dir: Path, config: dict[str, Any], enabled: bool = True) -> None:
        check_report_to(report_to)
        self.kind = report_to if enabled else "none"
        self._last = time.perf_counter()
        self._backend: Any = None
        if self.kind == "tensorboard":
            from torch.utils.tensorboard import SummaryWriter

            self._backend = SummaryWriter(log_dir=str(Path(run_dir) / TENSORBOARD_DIR))
        elif self.kind == "wandb":
            import wandb

            self._backend = wandb.init(
                project="sentcl", dir=str(run_dir), name=Path(run_dir).name, config=config, resume="allow"
            )
        elif self.kind == "mlflow":
            import mlflow

            self._backend = mlflow.start_run(run_name=Path(run_dir).name)
            mlflow.log_params({k: v for k, v in _flatten(config).items() if v is not None})

    def log(self, scalars: dict[str, float], step: int) -> None:
        if self.kind == "tensorboard":
            for name, value in scalars.items():
                self._backend.add_scalar(name, value, global_step=step)
            self._backend.flush()  # on disk at once: a run that stops with an error keeps its last events
        elif self.kind == "wandb":
            self._backend.log(scalars, step=step)
        elif self.kind == "mlflow":
            import mlflow

            mlflow.log_metrics(scalars, step=step)

    def log_step(self, step: int, outputs: dict[str, Any], lr: float, sentences: int) -> None:
        """After optimizer step ``step``: every scalar of the objective's outputs, lr, and sentences/s."""
        now = time.perf_counter()
        rate, self._last = sentences / max(now - self._last, 1e-9), now
        if self.kind == "none":
            return
        scalars = {f"train/{k}": float(v.detach() if hasattr(v, "detach") else v) for k, v in outputs.items()}
        self.log({**scalars, "train/lr": lr, "train/sentences_per_s": rate}, step)

    def log_eval(self, step: int, scores: dict[str, float]) -> None:
        """Dev scores (``eval/<task>``) and alignment/uniformity (``geometry/...``)."""
        geometry = {"alignment", "uniformity"}
        self.log(
            {(f"geometry/{k}" if k in geometry else f"eval/{k}"): float(v) for k, v in scores.items()}, step
        )

    def close(self) -> None:
        if self.kind == "tensorboard":
            self._backend.close()
        elif self.kind == "wandb":
            self._backend.finish()
        elif self.kind == "mlflow":
            import mlflow

            mlflow.end_run()
