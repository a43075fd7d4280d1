"""A masked-LM head over the encoder's own backbone, for SimCSE's auxiliary MLM loss (lambda · L_mlm).

Only the head is built and read: the ``*ForMaskedLM`` class of the backbone's config is built on the meta
device, its base is replaced by ``encoder.backbone`` (shared weights, one backbone), its head modules are
materialised, and their tensors alone are read from the checkpoint's safetensors file(s). Weights the class
ties (BERT's decoder to the word embeddings, its decoder bias to the head's bias) are tied, not read.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import Tensor, nn
from transformers import AutoModelForMaskedLM

from sentcl.files.paths import resolve_model_path
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.weights import SAFETENSORS, SAFETENSORS_INDEX, check_weight_files


class MLMHeadError(ValueError):
    """The checkpoint has no masked-LM head (and a new one was not allowed), or cannot have one."""


def _weight_files(name_or_path: str) -> list[Path]:
    """The checkpoint's safetensors file(s): a local folder's, or a hub id's cached ones."""
    path = resolve_model_path(name_or_path)
    folder = Path(path)
    if not folder.is_dir():
        from transformers.utils import cached_file

        try:
            found = cached_file(path, SAFETENSORS, _raise_exceptions_for_missing_entries=False)
        except OSError as err:
            raise MLMHeadError(
                f"model {name_or_path!r}: no weights to read a masked-LM head from ({err})"
            ) from err
        return [Path(found)] if found else []
    check_weight_files(folder)
    index = folder / SAFETENSORS_INDEX
    if index.is_file():
        shards = set(json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values())
        return [folder / shard for shard in sorted(shards)]
    return [folder / SAFETENSORS] if (folder / SAFETENSORS).is_file() else []


def _head_tensors(name_or_path: str, heads: set[str]) -> dict[str, Tensor]:
    """The checkpoint's tensors under the head modules' names (old LayerNorm gamma/beta spelled weight/bias)."""
    from safetensors import safe_open

    found: dict[str, Tensor] = {}
    for file in _weight_files(name_or_path):
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():  # noqa: SIM118 - a safetensors handle, not a dict
                if key.split(".", 1)[0] in heads:
                    name = key.removesuffix(".gamma") + ".weight" if key.endswith(".gamma") else key
                    name = name.removesuffix(".beta") + ".bias" if name.endswith(".beta") else name
                    found[name] = handle.get_tensor(key)
    return found


def checkpoint_head_tensors(name_or_path: str, heads: set[str]) -> dict[str, Tensor]:
    """The tensors of the checkpoint's top-level modules ``heads`` (e.g. ``{"cls"}``), by their names; none when
    the checkpoint has no such weights. TSDAE's decoder (``sentcl.methods.tsdae.decoder``) reads its LM head so."""
    return _head_tensors(name_or_path, heads)


def _tie(mlm: nn.Module, prefix: str) -> set[str]:
    """Tie what the class ties (``_tied_weights_keys``: target -> source); the tied targets' names."""
    tied = getattr(mlm, "_tied_weights_keys", None)
    pairs = dict(tied) if isinstance(tied, dict) else {}
    if not pairs and mlm.get_output_embeddings() is not None:  # the classic tie: decoder = word embeddings
        names = {id(p): n for n, p in mlm.named_parameters()}
        target = names.get(id(mlm.get_output_embeddings().weight))
        pairs = {target: f"{prefix}.embeddings.word_embeddings.weight"} if target else {}
    tie_embeddings = getattr(mlm.config, "tie_word_embeddings", True)
    done = set()
    for target, source in pairs.items():
        if source.startswith(prefix + ".") and not tie_embeddings:
            continue
        parent, _, leaf = target.rpartition(".")
        setattr(mlm.get_submodule(parent), leaf, mlm.get_parameter(source))
        done.add(target)
    return done


def attach_mlm_head(encoder: SentenceEncoder, name_or_path: str, allow_new_head: bool = False) -> nn.Module:
    """A ``*ForMaskedLM`` model whose base is ``encoder.backbone`` itself (shared weights, one backbone).

    The head's weights come from the checkpoint; a checkpoint without them (e.g. a sentence-transformers
    export) is an error unless ``allow_new_head``, which trains a freshly initialised head.
    """
    config = encoder.backbone.config
    try:
        with torch.device("meta"):
            mlm = AutoModelForMaskedLM.from_config(config)
    except ValueError as err:
        raise MLMHeadError(f"model {name_or_path!r} cannot have a masked-LM head: {err}") from err
    prefix = mlm.base_model_prefix
    heads = {name: child for name, child in mlm.named_children() if name != prefix}
    for child in heads.values():
        child.to_empty(device=encoder.backbone.device)
        child.apply(mlm._init_weights)  # a new head as the class initialises it; read weights replace it
    setattr(mlm, prefix, encoder.backbone)  # the MLM forward now runs through the encoder's own backbone
    tied = _tie(mlm, prefix)
    wanted = {k: v for k, v in mlm.state_dict().items() if k.split(".", 1)[0] in heads and k not in tied}
    found = _head_tensors(name_or_path, set(heads))
    missing_head = sorted(set(wanted) - set(found))
    if missing_head and not allow_new_head:
        raise MLMHeadError(
            f"checkpoint {name_or_path!r} has no masked-LM head weights (missing: {', '.join(missing_head[:3])}"
            f"{', ...' if len(missing_head) > 3 else ''}); set objective.mlm_new_head=true to train a new head, "
            "or start from a checkpoint that has one (e.g. bert-base-uncased)"
        )
    for key, tensor in found.items():
        if key in wanted and tuple(tensor.shape) != tuple(wanted[key].shape):
            raise MLMHeadError(
                f"checkpoint {name_or_path!r}: masked-LM head tensor {key} has shape {tuple(tensor.shape)}, the "
                f"backbone's config needs {tuple(wanted[key].shape)}"
            )
    mlm.load_state_dict({k: v for k, v in found.items() if k in wanted}, strict=False)
    for child in heads.values():
        child.eval()  # as from_pretrained returned it; the training loop sets the mode it trains in
    return mlm
