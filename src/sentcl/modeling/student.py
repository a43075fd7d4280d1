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

A narrower student (``model.student_ffn``): every kept layer's feed-forward block keeps the ``width`` of its
neurons (rows of its first linear map, columns of its second) of largest importance, in their order, and the
config's width (``intermediate_size``, DistilBERT's ``hidden_dim``) is set, so the folder reloads anywhere.
DynaBERT (Hou et al. 2020, "DynaBERT: Dynamic BERT with Adaptive Width and Depth") keeps the neurons of
largest importance, scored by the loss' change without them; our reading scores a neuron before distillation
has a loss: its mean |activation| over the real tokens of the training corpus times the norm of its output
weights, the size of what it writes into the layer's output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
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


# (path of the first linear map, path of the second, config attribute of the width) of a layer's feed-forward
FFN_HOMES: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    (("intermediate", "dense"), ("output", "dense"), "intermediate_size"),  # BERT, RoBERTa, XLM-R, MPNet
    (("ffn", "lin1"), ("ffn", "lin2"), "hidden_dim"),  # DistilBERT
)


def _attr(owner: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        owner = getattr(owner, name, None)
    return owner


FfnHome = tuple[tuple[str, ...], tuple[str, ...], str]


def ffn_linears(backbone: nn.Module) -> tuple[list[tuple[nn.Linear, nn.Linear]], FfnHome]:
    """Every layer's (first, second) feed-forward linear maps and their home (``FFN_HOMES``: the maps' paths
    and the config attribute of their width); a ConfigError for an architecture whose block is elsewhere."""
    layers, _, _ = layer_list(backbone)
    for home in FFN_HOMES:
        first, second, width_key = home
        pairs = [(_attr(layer, first), _attr(layer, second)) for layer in layers]
        if hasattr(backbone.config, width_key) and all(
            isinstance(a, nn.Linear) and isinstance(b, nn.Linear) for a, b in pairs
        ):
            return pairs, home
    homes = " or ".join(f"{'.'.join(a)} and {'.'.join(b)}" for a, b, _ in FFN_HOMES)
    raise ConfigError(
        f"model.student_ffn: cannot narrow {type(backbone).__name__}: its layers' feed-forward maps are not "
        f"linear maps at {homes}"
    )


@torch.no_grad()
def neuron_importance(encoder: Any, sentences: Sequence[str], batch_size: int = 64) -> list[torch.Tensor]:
    """Each layer's (F,) feed-forward neuron importance on ``sentences`` (module docstring): the mean
    |activation| entering its second linear map over the real tokens, times that map's column norms."""
    pairs, _ = ffn_linears(encoder.backbone)
    sums = [torch.zeros(second.in_features, dtype=torch.float64) for _, second in pairs]
    mask: dict[str, torch.Tensor] = {}

    def hook(index: int) -> Any:
        def record(_module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
            real = mask["m"].unsqueeze(-1).to(inputs[0].dtype)  # (B, T, 1): 1 on real tokens
            sums[index] += (inputs[0].abs() * real).sum(dim=(0, 1)).double().cpu()  # (F,)

        return record

    hooks = [second.register_forward_pre_hook(hook(i)) for i, (_, second) in enumerate(pairs)]
    tokens, was_training = 0, encoder.training
    encoder.eval()
    try:
        for start in range(0, len(sentences), batch_size):
            texts = sentences[start : start + batch_size]
            batch = {k: v.to(encoder.device) for k, v in encoder.tokenize(texts).items()}
            mask["m"] = batch["attention_mask"]
            tokens += int(batch["attention_mask"].sum())
            encoder(**batch)
    finally:
        for handle in hooks:
            handle.remove()
        encoder.train(was_training)
    if tokens == 0:
        raise ValueError("model.student_ffn: no token to score the feed-forward neurons on")
    return [
        (total / tokens).float() * second.weight.detach().float().norm(dim=0).cpu()
        for total, (_, second) in zip(sums, pairs, strict=True)
    ]


def keep_ffn(
    backbone: nn.Module, width: int, importance: Sequence[torch.Tensor], model: str = ""
) -> nn.Module:
    """Cut every layer's feed-forward block in place to its ``width`` neurons of largest ``importance`` (in
    their order; ``neuron_importance``), the config's width updated (returned)."""
    pairs, (first_path, second_path, width_key) = ffn_linears(backbone)
    current = pairs[0][0].out_features
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= current:
        raise ConfigError(
            f"model.student_ffn: {width!r} out of range: model {model or type(backbone).__name__} has "
            f"{current} feed-forward neurons a layer (give 1 to {current})"
        )
    layers, _, _ = layer_list(backbone)
    for layer, (first, second), score in zip(layers, pairs, importance, strict=True):
        kept = torch.sort(torch.topk(score, width).indices).values.to(first.weight.device)  # (width,)
        narrow_first = nn.Linear(first.in_features, width, bias=first.bias is not None)
        narrow_second = nn.Linear(width, second.out_features, bias=second.bias is not None)
        with torch.no_grad():
            narrow_first.weight.copy_(first.weight[kept])  # (width, H)
            narrow_second.weight.copy_(second.weight[:, kept])  # (H, width)
            if first.bias is not None:
                narrow_first.bias.copy_(first.bias[kept])
            if second.bias is not None:
                narrow_second.bias.copy_(second.bias)
        dtype, device = first.weight.dtype, first.weight.device
        setattr(_attr(layer, first_path[:-1]), first_path[-1], narrow_first.to(device, dtype))
        setattr(_attr(layer, second_path[:-1]), second_path[-1], narrow_second.to(device, dtype))
    setattr(backbone.config, width_key, width)
    return backbone
