"""The recipe keys that choose the best checkpoint without labels (``eval.unlabelled_*``), torch-free.

``UNLABELLED_MEASURES`` names the label-free measures that may pick ``best/`` and which way each is better; the
code of each is ``sentcl.evaluation.labelfree.report.MEASURES`` (tests/evaluation/test_labelfree_eval.py keeps
the two equal). The default is the measure whose rank correlation with the seven-task STS average was highest
in docs/results/labelfree-cpu.md.
"""

from __future__ import annotations

from typing import Any

from sentcl.config.typed import ConfigError, check_choice, check_positive

UNLABELLED_MEASURES = {
    "alignment_dropout": "lower",
    "alignment_deletion": "lower",
    "uniformity": "lower",
    "rankme": "higher",
    "anisotropy": "lower",
    "self_retrieval_at_1": "higher",
}
DEFAULT_MEASURE = "uniformity"
COMPRESSION_KINDS = ("int8", "binary")  # and a whole number: a Matryoshka truncation
DEFAULT_SAMPLE = 2000
FILE_HELP = (
    "A text file of unlabelled sentences (one a line; absolute, or relative to the working or data folder): pick "
    "the best checkpoint by eval.unlabelled_measure on it instead of eval.dev_task (no dev set needed)."
)
MEASURE_HELP = (
    f"The label-free measure that picks the best checkpoint with eval.unlabelled_file: {', '.join(UNLABELLED_MEASURES)}"
    " (the default predicted the STS average best in docs/results/labelfree-cpu.md)."
)
SAMPLE_HELP = "Lines of eval.unlabelled_file used (a seeded reservoir sample of a larger file)."


def check_unlabelled(eval_cfg: Any) -> None:
    """The three keys of an ``EvalConfig``: a known measure, a positive sample, a file name that is not blank."""
    check_choice("eval.unlabelled_measure", eval_cfg.unlabelled_measure, tuple(UNLABELLED_MEASURES))
    check_positive("eval.unlabelled_sample", eval_cfg.unlabelled_sample)
    if eval_cfg.unlabelled_file is not None and not str(eval_cfg.unlabelled_file).strip():
        raise ConfigError("eval.unlabelled_file is empty; name a text file or leave the key out")


def parse_compression(text: str) -> str:
    """``int8``, ``binary`` or a positive whole number (a truncation dimension), as given."""
    if text in COMPRESSION_KINDS or (text.isdigit() and int(text) > 0):
        return text
    raise ValueError(
        f"--compression takes int8, binary or a truncation dimension (a whole number), got {text!r}"
    )
