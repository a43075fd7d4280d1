"""Prompt templates (PromptBERT, SNCSE) as text, torch-free: the placeholders, the papers' templates, the rule a
template must follow and the denoising modes. The config checks templates with these; ``modeling/prompt.py``
writes sentences into them and pools the [MASK] state.
"""

from __future__ import annotations

from typing import Any

SENTENCE, MASK = "[X]", "[MASK]"
#: the templates of PromptBERT's unsupervised BERT-base run (the authors' run.sh "unsup-bert"): view 0's, also
#: the inference template, then view 1's
PROMPTBERT_BERT_TEMPLATES = (
    'This sentence of "[X]" means [MASK] .',
    'This sentence : "[X]" means [MASK] .',
)
#: SNCSE's (the authors' train_SNCSE.py): view 0 and inference, then view 1 and the negation's
SNCSE_BERT_TEMPLATES = PROMPTBERT_BERT_TEMPLATES[::-1]
#: when template denoising applies: ``train`` (in training only: PromptBERT's unsupervised BERT run), ``always``
#: (training and inference), ``never`` (SNCSE's code)
DENOISE_MODES = ("train", "always", "never")


def check_template(template: Any) -> None:
    """A template has exactly one [X] and exactly one [MASK], [X] first."""
    if not isinstance(template, str):
        raise ValueError(f"prompt template must be a string, got {template!r}")
    if template.count(SENTENCE) != 1 or template.count(MASK) != 1:
        raise ValueError(
            f"prompt template {template!r} must hold exactly one {SENTENCE} (the sentence) and one {MASK}"
        )
    if template.index(MASK) < template.index(SENTENCE):
        raise ValueError(f"prompt template {template!r}: {MASK} must come after {SENTENCE}")
