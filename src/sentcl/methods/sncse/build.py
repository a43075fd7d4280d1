"""SNCSE (Wang et al. 2022): PromptBERT's representation and positives, plus a soft negative, the negation.

Views per sentence: (template 0 (s), template 1 (s), template 1 (negation of s)); loss: InfoNCE on the first
two + ``bml_weight`` · the bidirectional margin loss (objectives/sncse.py). Negations come from our rule-based
English negator (data/negation.py) or from the user's ``data.negation_file``.

Checked against the authors' code (github.com/Sense-GVT/SNCSE, train_SNCSE.py, simcse/models.py, read, not
copied): view 0 is ``This sentence : "[X]" means [MASK] .`` (also the inference template), view 1 and the
negation use ``This sentence of "[X]" means [MASK] .``; the representation is the raw [MASK] state with an
MLP in training only and no template denoising (recipe: ``model.prompt_denoise: never``); α = 0.1, β = 0.3,
λ = 1e-3 (BERT; 5e-4 for RoBERTa); batch 256, lr 1e-5. Not reproduced: the authors append " ." to sentences
that do not end in punctuation, and their negations come from their own generator script (use
``data.negation_file`` to train on them).
"""

from __future__ import annotations

from collections.abc import Callable

from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig
from sentcl.data.negation import negate, read_negations
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.promptbert.build import training_prompt, two_templates
from sentcl.methods.sncse.loss import SNCSE
from sentcl.methods.sncse.options import SNCSEOptions


def negator(cfg: TrainConfig, corpus: Corpus) -> Callable[[str], str]:
    """The rule-based negator, or the user's file (which must hold every training sentence)."""
    if cfg.data.negation_file is None:
        return negate
    table = read_negations(cfg.data.negation_file)
    missing = [s for s in corpus.examples if s not in table]
    if missing:
        raise ConfigError(
            f"data.negation_file {cfg.data.negation_file} has no negation for {len(missing)} of the "
            f"{len(corpus.examples)} training sentences, e.g. {missing[0][:60]!r}"
        )
    return table.__getitem__


def build(cfg: TrainConfig, o: SNCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """SNCSE: views (t0(s), t1(s), t1(neg(s))), InfoNCE(h, h+) + λ·BML(h, h+, h_neg)."""
    prompt = training_prompt(cfg, tokenizer)
    first, second = two_templates(prompt)
    negation = negator(cfg, corpus)
    max_length = cfg.model.max_length

    def views(sentence: str) -> tuple[str, str, str]:
        return (
            prompt.fill([sentence], max_length, template=first)[0],
            prompt.fill([sentence], max_length, template=second)[0],
            prompt.fill([negation(sentence)], max_length, template=second)[0],
        )

    return Method(
        views=views,
        objective=SNCSE(o.temperature, o.bml_alpha, o.bml_beta, o.bml_weight),
        examples=corpus.examples,
    )
