"""DiffCSE (Chuang et al. 2022): unsupervised SimCSE + replaced-token detection conditioned on the sentence vector."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Method
from sentcl.methods.diffcse.generator import load_generator
from sentcl.methods.diffcse.loss import DiffCSEObjective
from sentcl.methods.diffcse.options import DiffCSEOptions
from sentcl.methods.views import duplicate_view
from sentcl.objectives.infonce import InfoNCE


def build(cfg: TrainConfig, o: DiffCSEOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Views (s, s) with independent dropout masks, InfoNCE + lambda · L_RTD.

    The frozen generator is ``model.generator`` (checked against the encoder's tokenizer here); the
    discriminator is built over a copy of the encoder's backbone when the objective is attached, trained beside
    the encoder, kept in ``training_state.pt`` (exact resume) and not saved into the model folder.
    """
    assert cfg.model.generator is not None  # DiffCSEOptions.check refuses a recipe without one
    objective = DiffCSEObjective(
        InfoNCE(o.temperature, o.similarity),
        load_generator(cfg.model.generator, tokenizer),
        o.lambda_weight,
        o.masking_ratio,
        o.edit_positions,
        o.generator_output,
        o.rtd_positions,
    )
    return Method(
        views=duplicate_view(2),
        objective=objective,
        examples=corpus.examples,
        views_are_copies=True,
    )
