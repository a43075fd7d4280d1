"""PromptBERT (Jiang et al. 2022), unsupervised: the same sentence under two templates is the positive pair.

The representation is the pooler ``mask`` (modeling/prompt.py: the [MASK] state of the template, minus the
template-only [MASK] state with matching position ids); the objective is InfoNCE (τ = 0.05). The templates are
``model.prompt_templates`` (default: the paper's two BERT templates), stored with the saved model, whose
``encode`` applies the first.

Checked against the authors' run.sh "unsup-bert" and prompt_bert/models.py (github.com/kongds/Prompt-BERT,
read, not copied): view 0 ``This sentence of "[X]" means [MASK] .`` (also the evaluation template), view 1
``This sentence : "[X]" means [MASK] .``; each view's own template-only state is subtracted in training (with
gradient), and evaluation uses no denoising (``model.prompt_denoise: train``; ``always`` also denoises at
inference); an MLP over the [MASK] state in training only (``model.mlp_only_train``); batch 256, lr 1e-5,
1 epoch, max length 32, fp16, STS-B dev every 125 steps. Not verified: whether the paper's 78.54 ± 0.15
(5 seeds) used exactly this script's flags.
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import ConfigError, TrainConfig
from sentcl.config.prompt_templates import PROMPTBERT_BERT_TEMPLATES
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method, ViewFn
from sentcl.methods.promptbert.options import PromptBERTOptions, check_mask_pooler
from sentcl.modeling.prompt import Prompt
from sentcl.objectives.infonce import InfoNCE


def training_prompt(cfg: TrainConfig, tokenizer: PreTrainedTokenizerBase) -> Prompt:
    """The prompt the model holds (pooler ``mask`` is required): ``model.prompt_templates`` or the paper's."""
    check_mask_pooler(cfg)
    templates = cfg.model.prompt_templates or list(PROMPTBERT_BERT_TEMPLATES)
    try:
        prompt = Prompt(templates, tokenizer, cfg.model.prompt_denoise)
        prompt.fill(["x"], cfg.model.max_length, template=len(templates) - 1)
    except ValueError as err:
        raise ConfigError(f"model.prompt_templates: {err}") from None
    return prompt


def template_views(prompt: Prompt, max_length: int, templates: tuple[int, ...]) -> ViewFn:
    """View v of a sentence is the sentence written into template ``templates[v]`` (cut to ``max_length``)."""

    def views(sentence: str) -> tuple[str, ...]:
        return tuple(prompt.fill([sentence], max_length, template=t)[0] for t in templates)

    return views


def two_templates(prompt: Prompt) -> tuple[int, int]:
    """Templates of (view 0, view 1): the first two; one template serves both (then dropout alone differs)."""
    return 0, min(1, len(prompt.templates) - 1)


def build(
    cfg: TrainConfig, o: PromptBERTOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase
) -> Method:
    """PromptBERT: views (template 0 (s), template 1 (s)), InfoNCE with in-batch negatives."""
    prompt = training_prompt(cfg, tokenizer)
    return Method(
        views=template_views(prompt, cfg.model.max_length, two_templates(prompt)),
        objective=InfoNCE(o.temperature),
        examples=corpus.examples,
    )
