"""Evaluation: STS (SentEval's protocol as SimCSE runs it)."""

from sentcl.evaluation.sts import (
    STS_TASKS,
    EncodeFn,
    aggregate,
    evaluate_sts,
    evaluate_sts_dev,
    format_sts_table,
    load_sts_task,
    main_score,
    write_json,
)

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
