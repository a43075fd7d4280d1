"""The loader of a PyTorch model, in one downward pass: the folder's kind is known (locate.py), the backbone is
loaded (backbone.py), the parts beside it are read and checked (parts.py), and the encoder is built last, in
one call, from what was checked.

``open_model`` (open.py) and ``SentenceEncoder.from_pretrained`` both come here with a located folder and the
class to build (``SentenceEncoder``, or the class whose ``from_pretrained`` was called), so this module sits
below encoder.py. ``load_torch`` opens a pair (a dual folder) as a ``DualEncoder``; ``load_single`` opens one
encoder (a pair's f). Never an untrained part at inference: for training (``for_training=True``) a missing MLP
head may be new.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torch import nn

from sentcl.config.poolers import pooler_info
from sentcl.config.typed import ConfigError
from sentcl.defaults import TRAIN_MAX_LENGTH
from sentcl.files.paths import ModelFolderError
from sentcl.modeling.backbone import check_finite, load_backbone
from sentcl.modeling.folder_layout import SENTCL_CONFIG, position_limit
from sentcl.modeling.locate import ModelSource, locate
from sentcl.modeling.onnx_encoder import ONNX_CONFIG
from sentcl.modeling.parts import plain_parts, sentcl_parts, st_parts
from sentcl.modeling.prompt import prompt_arguments
from sentcl.modeling.st_folder import check_dense_chain, read_st_folder, st_pooler
from sentcl.modeling.tokenizer_checks import check_patterns, check_vocab_fits

if TYPE_CHECKING:
    from sentcl.modeling.dual import DualEncoder
    from sentcl.modeling.encoder import SentenceEncoder


@dataclass(frozen=True)
class LoadOptions:
    """What the caller asks of a loader; None: what the folder says."""

    pooler: str | None = None
    mlp_only_train: bool | None = None
    train_max_length: int | None = None  # the training truncation (SentenceEncoder.train_max_length)
    dropout: float | None = None
    for_training: bool = False  # a missing MLP head may be new
    prompt: list[str] | None = None
    prompt_denoise: str | None = None
    truncate_dim: int | None = None  # a Matryoshka prefix (None: the folder's)


#: The kinds that are not a PyTorch transformer, as an error says them.
NOT_TORCH = {
    "onnx": f"an exported ONNX folder ({ONNX_CONFIG}), not a PyTorch model",
    "static": "a static model (StaticEmbedding: one vector per token), not a transformer",
}


def load_single(
    source: ModelSource, options: LoadOptions, encoder_class: type[SentenceEncoder]
) -> SentenceEncoder:
    """One ``encoder_class`` of a sentcl, sentence-transformers or plain folder (a pair's f): the backbone, its
    parts, the parts checked against the backbone (lengths within the position limit, each Dense layer's
    width, a Matryoshka prefix within the width, every weight finite at inference), then the encoder."""
    if source.kind in ("onnx", "static"):
        raise ModelFolderError(f"{source.path} is {NOT_TORCH[source.kind]}; open it with open_model")
    folder, path, saved = Path(source.path), source.path, source.saved
    layout = read_st_folder(folder) if source.kind == "sentence-transformers" else None
    backbone_path = str(folder / layout.transformer_path) if layout and layout.transformer_path else path
    loaded = load_backbone(backbone_path, source.name, options.dropout, options.for_training)
    config = loaded.config
    check_patterns(loaded.tokenizer, backbone_path)
    check_vocab_fits(loaded.tokenizer, loaded.model.get_input_embeddings().num_embeddings, backbone_path)
    if saved is not None:
        parts = sentcl_parts(folder, saved, loaded, options)
    elif layout is not None:
        layout.pooler = st_pooler(layout, config.hidden_size)
        parts = st_parts(folder, layout, loaded, options)
    else:
        parts = plain_parts(path, loaded, options)
    limit = position_limit(config)
    train_max_length = options.train_max_length or parts.train_max_length or TRAIN_MAX_LENGTH
    for value, key in (
        (train_max_length, "training truncation model.max_length"),
        (parts.seq_limit, "max_length"),
    ):
        if limit is not None and value is not None and value > limit:
            raise ConfigError(
                f"{key}={value} is above the position limit of model {source.name} ({limit} tokens, from "
                f"its config.json max_position_embeddings={config.max_position_embeddings}); use at most {limit}"
            )
    width = check_dense_chain(config.hidden_size, parts.dense, f"the backbone's hidden_size in {path}")
    truncate_dim = (
        None
        if options.for_training
        else (parts.truncate_dim if options.truncate_dim is None else options.truncate_dim)
    )
    if truncate_dim is not None and truncate_dim > width:  # training always sees the full vector
        where = f"{folder / SENTCL_CONFIG}: " if options.truncate_dim is None else ""
        raise ModelFolderError(
            f"{where}truncate_dim {truncate_dim} exceeds the embedding size {width} of model {path}"
        )
    if not options.for_training:
        modules = {
            "": loaded.model,
            "head.": parts.head,
            "dense.": nn.ModuleList(parts.dense),
            "flow.": parts.flow,
        }
        check_finite(modules, path)
    prompt = prompt_arguments(pooler_info(parts.pooler).prompt, saved, options.prompt, options.prompt_denoise)
    return encoder_class(
        loaded.model,
        loaded.tokenizer,
        pooler=parts.pooler,
        mlp_only_train=parts.mlp_only_train if options.mlp_only_train is None else options.mlp_only_train,
        train_max_length=train_max_length,
        head=parts.head,
        dense=parts.dense,
        normalize_output=parts.normalize,
        seq_limit=parts.seq_limit,
        **prompt,
        flow=parts.flow,
        postprocess=parts.postprocess,
        truncate_dim=truncate_dim,
        source=path,
        check_outputs=not options.for_training,
    )


def load_torch(
    source: ModelSource, options: LoadOptions, encoder_class: type[SentenceEncoder]
) -> SentenceEncoder | DualEncoder:
    """A PyTorch model: one ``encoder_class``, or for a dual folder the pair, f from the folder and g from its
    context_encoder/ (each an ``encoder_class``)."""
    if source.kind != "dual":
        return load_single(source, options, encoder_class)
    from sentcl.modeling.dual import DualEncoder

    assert source.saved is not None
    dual = source.saved["dual"]
    f = load_single(source, options, encoder_class)
    g = load_single(locate(str(Path(source.path) / dual["context_encoder"])), options, encoder_class)
    return DualEncoder(f, g, dual["combine"])


__all__ = ["LoadOptions", "load_single", "load_torch"]
