"""Evaluation: STS (SentEval's protocol as SimCSE runs it), transfer, the user's own sets; ``runner`` names them."""

from sentcl.evaluation.senteval_readers import STS_TASKS, load_sts_task
from sentcl.evaluation.sts import (
    aggregate,
    evaluate_sts,
    evaluate_sts_dev,
    format_sts_table,
    main_score,
    write_json,
)
from sentcl.types import EncodeFn

__all__ = [
    "STS_TASKS",
    "EncodeFn",
    "aggregate",
    "evaluate_sts",
    "evaluate_sts_dev",
    "format_sts_table",
    "load_sts_task",
    "main_score",
    "write_json",
]
