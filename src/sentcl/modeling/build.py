"""The encoder a training config asks for: one SentenceEncoder, or f and g; a student's layer subset and
feed-forward width (``model.student_layers``, ``model.student_ffn``: modeling/student.py) and its output Dense
layer (``model.output_dim``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.heads import DenseLayer
from sentcl.modeling.loading import LoadOptions
from sentcl.modeling.open import open_encoder
from sentcl.modeling.student import keep_ffn, keep_layers, neuron_importance

if TYPE_CHECKING:  # type-only: modeling does not import the config's floor
    from sentcl.config import ModelConfig

logger = logging.getLogger("sentcl")


def start_encoder(
    cfg: ModelConfig, for_training: bool = True, fit_sentences: Sequence[str] | None = None
) -> SentenceEncoder:
    """The start model ``model.name_or_path`` with the config's pooler, head, truncation and prompts, cut to
    ``model.student_layers`` and narrowed to ``model.student_ffn`` (its neurons scored on ``fit_sentences``)
    if set: for training (its dropout; a missing MLP head may be new) or, with ``for_training=False``, as it
    is evaluated before training (an evaluate-only grid point)."""
    options = LoadOptions(
        pooler=cfg.pooler,
        mlp_only_train=cfg.mlp_only_train,
        train_max_length=cfg.max_length,
        dropout=cfg.dropout if for_training else None,
        for_training=for_training,
        prompt=cfg.prompt_templates,
        prompt_denoise=cfg.prompt_denoise,
    )
    encoder = open_encoder(cfg.name_or_path, options)
    if cfg.student_layers is not None:
        keep_layers(encoder.backbone, cfg.student_layers, cfg.name_or_path)
        logger.info("%s: student of layers %s", cfg.name_or_path, cfg.student_layers)
    if cfg.student_ffn is not None:
        if not fit_sentences:
            raise ValueError(
                "model.student_ffn needs sentences to score the neurons on (the training corpus)"
            )
        importance = neuron_importance(encoder, fit_sentences)
        keep_ffn(encoder.backbone, cfg.student_ffn, importance, cfg.name_or_path)
        logger.info(
            "%s: %d feed-forward neurons a layer kept, scored on %d training sentences",
            cfg.name_or_path, cfg.student_ffn, len(fit_sentences),
        )  # fmt: skip
    return encoder


def build_encoder(
    cfg: ModelConfig, fit_sentences: Sequence[str] | None = None
) -> SentenceEncoder | DualEncoder:
    """``fit_sentences``: the training sentences ``model.output_dim_init: pca`` is fitted on and
    ``model.student_ffn`` scores its neurons on."""
    if cfg.two_encoders:
        return DualEncoder(start_encoder(cfg), start_encoder(cfg), cfg.dual_embedding)
    encoder = start_encoder(cfg, fit_sentences=fit_sentences)
    if cfg.output_dim is not None:
        add_output_dense(encoder, cfg.output_dim, cfg.output_dim_init, fit_sentences)
    return encoder


def add_output_dense(
    encoder: SentenceEncoder, dim: int, init: str, fit_sentences: Sequence[str] | None = None
) -> DenseLayer:
    """Append a trainable Dense layer (identity activation) to ``dim`` outputs, before the model's
    normalisation: PCA of the encoder's own vectors of ``fit_sentences`` (init "pca"), else nn.Linear's
    random initialisation (as a new sentence-transformers Dense module)."""
    width = encoder.full_embedding_dim
    if init == "pca":
        from sentcl.modeling.postprocess.pca import fit_pca, raw_vectors

        if not fit_sentences:
            raise ValueError("model.output_dim_init: pca needs sentences to fit on (the training corpus)")
        where = f"model.output_dim_init pca ({len(fit_sentences)} training sentences)"
        pca = fit_pca(raw_vectors(encoder, fit_sentences), dim, where, option="model.output_dim")
        layer = pca.as_dense()
        logger.info(
            "%s: output Dense %d -> %d from PCA keeping %.2f%% of the variance",
            encoder.source, width, dim, 100 * float(pca.explained_variance_ratio.sum()),
        )  # fmt: skip
    elif init == "random":
        layer = DenseLayer(width, dim, bias=True, activation="identity")
    else:
        raise ValueError(f"unknown model.output_dim_init {init!r}; valid: pca, random")
    encoder.dense.append(layer.to(encoder.device))
    return layer
