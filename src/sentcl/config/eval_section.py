"""The ``eval:`` section of a training recipe: the dev task that picks ``best/`` (or a label-free measure on
unlabelled text), the final tasks, and how they are scored. Torch-free, like every section."""

from __future__ import annotations

from dataclasses import dataclass

from sentcl.config import unlabelled
from sentcl.config.names import DEV_PREFIXES, DEV_TASKS
from sentcl.config.typed import ConfigError, check_choice, check_positive, opt
from sentcl.defaults import ENCODE_BATCH_SIZE
from sentcl.files.read import preview


def check_dev_task_name(dev_task: str) -> None:
    """A dev task is a task with a dev split, or PREFIX:PATH (pairs:FILE, retrieval:DIR): the names of
    sentcl.config.names, which match the evaluation runner's registry."""
    default = EvalConfig.dev_task  # listed first
    names = sorted(DEV_TASKS, key=lambda name: name != default)
    prefix, colon, path = dev_task.partition(":")
    if colon and prefix in DEV_PREFIXES:
        if not path.strip():
            raise ConfigError(f"eval.dev_task={preview(dev_task)} needs a path, e.g. {prefix}:path/to/dev")
    else:
        check_choice("eval.dev_task", dev_task, (*names, *(f"{p}:PATH" for p in DEV_PREFIXES)))


@dataclass
class EvalConfig:
    dev_task: str = opt("stsb_dev", "Task scored during training to pick the best checkpoint.")
    final_tasks: list[str] = opt(
        ["sts"], "Tasks evaluated on the best model after training (sts, dev, ...).", resume_safe=True
    )
    batch_size: int = opt(
        ENCODE_BATCH_SIZE, "Sentences per encoding batch during evaluation.", resume_safe=True
    )
    track_alignment_uniformity: bool = opt(
        False,
        "Also log alignment/uniformity on STS-B dev at step 0 and every eval (the paper's Figure 2).",
        resume_safe=True,
    )
    compare_with_start: bool = opt(
        False, "Also evaluate the starting model on final_tasks, for a side-by-side table.", resume_safe=True
    )
    transfer_protocol: str = opt(
        "senteval",
        "Classifier of the transfer tasks: senteval (SentEval's PyTorch logistic regression, as SimCSE reports) "
        "or sklearn (ours: scikit-learn's logistic regression with a C grid).",
        resume_safe=True,
    )
    unlabelled_file: str | None = opt(None, unlabelled.FILE_HELP)
    unlabelled_measure: str = opt(unlabelled.DEFAULT_MEASURE, unlabelled.MEASURE_HELP)
    unlabelled_sample: int = opt(unlabelled.DEFAULT_SAMPLE, unlabelled.SAMPLE_HELP)

    def __post_init__(self) -> None:
        check_positive("eval.batch_size", self.batch_size)
        check_choice("eval.transfer_protocol", self.transfer_protocol, ("senteval", "sklearn"))
        check_dev_task_name(self.dev_task)
        unlabelled.check_unlabelled(self)
