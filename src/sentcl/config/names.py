"""The names a recipe may use for things whose code imports torch: readers, augmentations, evaluation tasks.

Torch-free, so that reading and validating a recipe imports no model code. Each tuple names exactly what the
registry beside the code holds (``sentcl.data.sources.READERS``, ``sentcl.data.augment``'s registries,
``sentcl.evaluation.runner.TASKS`` / ``GROUPS`` / ``DEV_PREFIXES``); tests/methods/test_method_records.py fails
when the two differ.
"""

from __future__ import annotations

from collections.abc import Sequence

#: training-file readers (sentcl.data.sources.READERS)
READERS = (
    "lines",
    "next_sentence",
    "nli_csv",
    "nli_jsonl",
    "offline_english",
    "ordered_lines",
    "pairs",
    "scored_pairs",
    "senteval_snli",
    "stsb",
)
#: the NLI readers that group hypotheses by premise (supervised SimCSE's neutral hard negatives)
NEUTRAL_READERS = ("nli_jsonl", "senteval_snli")
#: readers whose examples carry a gold score (CoSENT's scored pairs)
SCORED_READERS = ("scored_pairs", "stsb")
#: text augmentations of the positive view (sentcl.data.augment.TEXT_AUGMENTATIONS)
TEXT_AUGMENTATIONS = ("crop", "delete_one_word", "mlm_replacement", "synonym_replacement", "word_deletion")
#: token and feature augmentations (TOKEN_AUGMENTATIONS + FEATURE_AUGMENTATIONS), sorted
TOKEN_AUGMENTATIONS = ("feature_cutoff", "span_cutoff", "token_cutoff", "token_shuffle")
#: evaluation tasks (sentcl.evaluation.runner.TASKS), in the runner's order
EVAL_TASKS = (
    "sts",
    "dev",
    "stsb",
    "stsb_dev",
    "transfer",
    "transfer_fast",
    "align_uniform",
    "anisotropy",
    "mteb",
)
#: composite task names (runner.GROUPS)
EVAL_GROUPS = ("full", "full_fast")
#: tasks that may pick the best checkpoint: a dev split and a headline score (runner.dev_task_names())
DEV_TASKS = ("dev", "stsb_dev")
#: dev tasks on the user's own data, written PREFIX:PATH (runner.DEV_PREFIXES)
DEV_PREFIXES = ("pairs", "retrieval")


def unknown_tasks(tasks: Sequence[str]) -> list[str]:
    """The names of ``tasks`` that are neither a task nor a group."""
    return [t for t in tasks if t not in EVAL_TASKS and t not in EVAL_GROUPS]
