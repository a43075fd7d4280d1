"""A student from a subset of the start model's transformer layers (``model.student_layers``).

As sentence-transformers' distillation example builds its student (Reimers & Gurevych 2020 train it to
reproduce the teacher's vectors): the backbone keeps only the transformer layers at the given indices, in
model order, with their trained weights; the embeddings and every other weight stay. The config's layer count
(``num_hidden_layers``, DistilBERT's ``n_layers``) is set to the new depth, so the saved folder reloads
as an ordinary model of that depth (sentcl, sentence-transformers, ONNX export, the service).

The indices must be strictly increasing (our rule): the example keeps ``[layer for i, layer in
enumerate(layers) if i in layers_to_keep]``, which silently sorts and drops repeats, so an unsorted or repeated
list is an error here rather than a model other than the one asked for.

Supported: BERT-like models whose layers are ``encoder.layer`` (BERT, RoBERTa, XLM-R, ELECTRA, MPNet, ...) and
DistilBERT (``transformer.layer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

from sentcl.config.typed import ConfigError

# (attribute path of the layer ModuleList, config attribute holding the layer count)
LAYER_HOMES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("encoder", "layer"), "num_hidden_layers"),  # BERT, RoBERTa, XLM-R, ELECTRA, MPNet
    (("transformer", "layer"), "n_layers"),  # DistilBERT
)


def layer_list(backbone: nn.Module) -> tuple[nn.ModuleList, Any, str]:
    """(the backbone's layer ModuleList, its owner, the config attribute of the count); a ConfigError for an
    architecture whose layers are elsewhere."""
    for path, count_key in LAYER_HOMES:
        owner: Any = backbone
        for name in path[:-1]:
            owner = getattr(owner, name, None)
        layers = getattr(owner, path[-1], None) if owner is not None else None
        if isinstance(layers, nn.ModuleList) and hasattr(backbone.config, count_key):
            return layers, owner, count_key
    homes = " or ".join(".".join(p) for p, _ in LAYER_HOMES)
    raise ConfigError(
        f"model.student_layers: cannot cut {type(backbone).__name__}: its transformer layers are not a "
        f"ModuleList at {homes} (BERT-, RoBERTa-, XLM-R- and DistilBERT-like models are supported)"
    )


def check_student_layers(layers: Sequence[int], count: int, model: str) -> None:
    """Indices in [0, count), strictly increasing, at least one; else a ConfigError naming the model's depth."""
    if not layers:
        raise ConfigError("model.student_layers: give at least one layer index (null keeps every layer)")
    bad = [i for i in layers if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < count]
    if bad:
        raise ConfigError(
            f"model.student_layers: {bad} out of range: model {model} has {count} layers (indices 0 to "
            f"{count - 1})"
        )
    if any(b <= a for a, b in zip(layers, layers[1:], strict=False)):
        raise ConfigError(
            f"model.student_layers: {list(layers)} must be strictly increasing (no repeats): the student keeps "
            "the layers in the model's order"
        )


def keep_layers(backbone: nn.Module, layers: Sequence[int], model: str = "") -> nn.Module:
    """Cut ``backbone`` in place to the transformer layers at ``layers`` (returned); config updated."""
    modules, owner, count_key = layer_list(backbone)
    check_student_layers(layers, len(modules), model or type(backbone).__name__)
    kept = nn.ModuleList([modules[i] for i in layers])
    for new_index, layer in enumerate(kept):
        for module in layer.modules():  # the cache index of attention modules (unused by an encoder)
            if isinstance(getattr(module, "layer_idx", None), int):
                module.layer_idx = new_index
    owner.layer = kept
    setattr(backbone.config, count_key, len(kept))
    layer_types = getattr(backbone.config, "layer_types", None)
    if isinstance(layer_types, list) and len(layer_types) == len(modules):
        backbone.config.layer_types = [layer_types[i] for i in layers]
    return backbone
