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
#: evaluation tasks (sentcl.evaluation.runner.TASKS), in the runner's order, with the help line each task
#: shows in ``sentcl eval --help`` (the task's record reads it from here)
EVAL_TASK_HELP: dict[str, str] = {
    "sts": "the seven STS tasks (STS12-16 'all', STS-B test, SICK-R test)",
    "dev": "STS-B dev and SICK-R trial",
    "stsb": "STS-B test only",
    "stsb_dev": "STS-B dev only",
    "transfer": "the seven SentEval transfer tasks (SentEval's protocol, SimCSE's test mode: 10 folds)",
    "transfer_fast": "transfer tasks, SentEval's prototyping settings (SimCSE's fasttest: 5 folds, RMSprop)",
    "align_uniform": "alignment/uniformity on STS-B test",
    "anisotropy": "spectrum, random-pair cosine, cosine by gold",
    "mteb": "the seven STS tasks scored by mteb's own code, data from the local SentEval folder (offline)",
}
EVAL_TASKS = tuple(EVAL_TASK_HELP)
#: the seven SentEval transfer tasks (sentcl.evaluation.transfer), in SimCSE's table order
TRANSFER_TASKS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
#: a --retrieval query judged only with score 0: counted with 0 (BEIR's mean, the default) or left out
#: (sentcl.evaluation.retrieval_eval)
ZERO_JUDGED = ("keep", "drop")
DEFAULT_ZERO_JUDGED = "keep"
#: how `sentcl mine` draws negatives among the ranked candidates (sentcl.index.mining)
MINING_SAMPLING = ("top", "random")
#: search backends (sentcl.index.exact.build_index)
SEARCH_BACKENDS = ("auto", "exact", "faiss")
#: composite task names -> the tasks they run (runner.GROUPS)
EVAL_GROUP_MEMBERS: dict[str, tuple[str, ...]] = {
    "full": ("sts", "transfer"),
    "full_fast": ("sts", "transfer_fast"),
}
EVAL_GROUPS = tuple(EVAL_GROUP_MEMBERS)
#: tasks that may pick the best checkpoint: a dev split and a headline score (runner.dev_task_names())
DEV_TASKS = ("dev", "stsb_dev")
#: dev tasks on the user's own data, written PREFIX:PATH (runner.DEV_PREFIXES)
DEV_PREFIXES = ("pairs", "retrieval")


def eval_tasks_help() -> str:
    """One line per task and group, for ``sentcl eval --help`` and ``sentcl report --help``."""
    groups = [f"{name}: {' + '.join(members)}" for name, members in EVAL_GROUP_MEMBERS.items()]
    return "; ".join([*(f"{name}: {help_}" for name, help_ in EVAL_TASK_HELP.items()), *groups])


def unknown_tasks(tasks: Sequence[str]) -> list[str]:
    """The names of ``tasks`` that are neither a task nor a group."""
    return [t for t in tasks if t not in EVAL_TASKS and t not in EVAL_GROUPS]


#: The engines ``sentcl encode`` and ``sentcl mine`` run the encoder on (``sentcl.engines.ENGINES``' names).
ENGINE_NAMES = ("local", "ray")
#: The input formats of ``sentcl encode --input`` (``sentcl.engines.sources``).
INPUT_FORMATS = ("text", "jsonl", "parquet")
