"""sentence-transformers folders, both ways: read one into sentcl's parts, write sentcl's parts as one.

A sentence-transformers (ST) folder lists its modules in ``modules.json``: a Transformer, a Pooling
module, then optional Dense modules and a Normalize module. sentcl reads:

- Pooling ``mean`` -> pooler ``avg``; ``cls`` -> ``cls`` when the first Dense module is an H -> H layer with
  Tanh or LeakyReLU (it becomes the MLP head), else ``cls_before_pooler``. Other modes (max, lasttoken,
  weightedmean, mean_sqrt_len_tokens, several modes at once) are refused with a clear error.
- Dense -> ``DenseLayer`` (any size; Tanh, LeakyReLU, Identity, ReLU, GELU or Sigmoid), Normalize -> an L2
  normalisation of the output, Dropout -> nothing (it is the identity at inference).
- ``sentence_bert_config.json``'s ``max_seq_length`` -> the inference truncation.

Writing uses the spellings that sentence-transformers 3.x to 6.x all read: module types
``sentence_transformers.models.<Class>``, Pooling's ``word_embedding_dimension`` and ``pooling_mode_*``
booleans (6.x maps them to its ``pooling_mode``), Dense's ``in_features``/``out_features``/``bias``/
``activation_function`` (a ``torch.nn`` class path) with ``linear.weight``/``linear.bias`` in
``model.safetensors``, and ``config_sentence_transformers.json`` stamped with version 3.0.0 (the oldest
release this layout is written for, so no release warns that the folder is newer than itself). Poolers ST
cannot express (``avg_top2``, ``avg_first_last``) get no ST files at all: sentcl logs one line instead.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import transformers
from safetensors.torch import load_file, save_file
from torch import nn

from sentcl.files import read_json
from sentcl.modeling.heads import ACTIVATIONS, DENSE_ACTIVATIONS, DenseLayer
from sentcl.paths import ModelFolderError

logger = logging.getLogger("sentcl")

MODULES_JSON = "modules.json"
ST_CONFIG = "sentence_bert_config.json"
ST_MODEL_CONFIG = "config_sentence_transformers.json"
ST_WRITTEN_FOR = "3.0.0"
# sentcl inference pooler -> ST pooling mode; the others have no ST Pooling equivalent.
ST_POOLING_OF = {"cls": "cls", "cls_before_pooler": "cls", "avg": "mean"}
_LEGACY_MODES = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
_ACTIVATION_OF_CLASS = {cls_name: name for name, cls_name in DENSE_ACTIVATIONS.items()}


@dataclass
class STLayout:
    """What an ST folder holds, in sentcl's terms."""

    transformer_path: str  # relative to the folder; "" for the folder itself
    pooling_mode: str  # ST's mode name
    pooler: str  # the sentcl pooler it maps to
    dense: list[DenseLayer] = field(default_factory=list)
    normalize: bool = False
    max_seq_length: int | None = None


def is_st_folder(folder: str | Path) -> bool:
    return Path(folder, MODULES_JSON).is_file()


def is_head_like(layer: DenseLayer, hidden: int) -> bool:
    """A Dense module that is exactly sentcl's MLP head: Linear(H, H) with bias, Tanh or LeakyReLU."""
    lin = layer.linear
    return (
        lin.in_features == hidden
        and lin.out_features == hidden
        and lin.bias is not None
        and layer.activation in ACTIVATIONS
    )


def _pooling_mode(folder: Path) -> str:
    file = folder / "config.json"
    config = read_json(file, dict, error=ModelFolderError) if file.is_file() else {}
    mode = config.get("pooling_mode")
    if mode is None:
        modes = [m for key, m in _LEGACY_MODES.items() if config.get(key)]
        mode = modes or ["mean"]  # ST's default
    modes = [mode] if isinstance(mode, str) else list(mode)
    if len(modes) != 1 or modes[0] not in ("mean", "cls"):
        raise ModelFolderError(
            f"{file}: pooling mode {'+'.join(map(str, modes))} has no sentcl pooler (sentcl reads the modes "
            "mean -> avg and cls -> cls/cls_before_pooler); pass --pooler / model.pooler to choose one"
        )
    return modes[0]


def read_dense(folder: Path) -> DenseLayer:
    """An ST Dense module folder (config.json + model.safetensors or pytorch_model.bin) -> DenseLayer."""
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ModelFolderError(f"{config_file}: missing (a Dense module's settings)")
    config = read_json(config_file, dict, error=ModelFolderError)
    try:
        in_f, out_f = int(config["in_features"]), int(config["out_features"])
    except (KeyError, TypeError, ValueError):
        raise ModelFolderError(f"{config_file}: needs whole numbers in_features and out_features") from None
    act_path = str(config.get("activation_function", "torch.nn.modules.activation.Tanh"))
    activation = _ACTIVATION_OF_CLASS.get(act_path.rsplit(".", 1)[-1])
    if activation is None or not act_path.startswith("torch."):
        raise ModelFolderError(
            f"{config_file}: activation_function {act_path!r} is not one sentcl reads "
            f"(torch.nn {', '.join(DENSE_ACTIVATIONS.values())})"
        )
    if config.get("use_residual"):
        raise ModelFolderError(f"{config_file}: use_residual=true is not supported by sentcl")
    layer = DenseLayer(in_f, out_f, bias=bool(config.get("bias", True)), activation=activation)
    if (folder / "model.safetensors").is_file():
        weights_file = folder / "model.safetensors"
        weights = load_file(str(weights_file))
    elif (folder / "pytorch_model.bin").is_file():
        weights_file = folder / "pytorch_model.bin"
        weights = torch.load(weights_file, map_location="cpu", weights_only=True)
    else:
        raise ModelFolderError(f"{folder}: a Dense module without weights (model.safetensors)")
    wanted = {k: v for k, v in weights.items() if k.startswith("linear.")}
    try:
        layer.load_state_dict(wanted)
    except RuntimeError as err:
        raise ModelFolderError(f"{weights_file}: does not fit {config_file} ({err})") from None
    return layer


def read_st_folder(folder: Path, hidden_size: int | None = None) -> STLayout:
    """Parse modules.json and its modules; ``hidden_size`` (the backbone's) decides whether Dense 0 is a head."""
    modules_file = folder / MODULES_JSON
    modules = read_json(modules_file, list, error=ModelFolderError)
    transformer_path: str | None = None
    mode: str | None = None
    dense: list[DenseLayer] = []
    normalize = False
    for i, entry in enumerate(modules):
        if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
            raise ModelFolderError(f"{modules_file}: entry {i} is not an object with a 'type'")
        kind = entry["type"].rsplit(".", 1)[-1]
        sub = folder / str(entry.get("path", ""))
        order_ok = {
            "Transformer": i == 0,
            "Pooling": transformer_path is not None and mode is None,
            "Dense": mode is not None and not normalize,
            "Normalize": mode is not None and not normalize,
            "Dropout": mode is not None,
        }
        if kind not in order_ok:
            raise ModelFolderError(
                f"{modules_file}: module {i} ({entry['type']}) has no sentcl equivalent; sentcl reads "
                "Transformer, Pooling, Dense, Normalize and Dropout"
            )
        if not order_ok[kind]:
            raise ModelFolderError(
                f"{modules_file}: module {i} ({kind}) out of order; sentcl reads Transformer, Pooling, "
                "then Dense modules, then Normalize"
            )
        if kind == "Transformer":
            transformer_path = str(entry.get("path", ""))
        elif kind == "Pooling":
            mode = _pooling_mode(sub)
        elif kind == "Dense":
            dense.append(read_dense(sub))
        elif kind == "Normalize":
            normalize = True
    if transformer_path is None or mode is None:
        raise ModelFolderError(f"{modules_file}: needs a Transformer module and a Pooling module")
    max_seq_length = None
    st_config = folder / transformer_path / ST_CONFIG
    if st_config.is_file():
        settings = read_json(st_config, dict, error=ModelFolderError)
        if settings.get("do_lower_case"):
            raise ModelFolderError(f"{st_config}: do_lower_case=true is not supported by sentcl")
        value = settings.get("max_seq_length")
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise ModelFolderError(
                f"{st_config}: max_seq_length must be a positive whole number, got {value!r}"
            )
        max_seq_length = value
    layout = STLayout(transformer_path, mode, "", dense, normalize, max_seq_length)
    layout.pooler = st_pooler(layout, hidden_size)
    return layout


def st_pooler(layout: STLayout, hidden_size: int | None) -> str:
    """The sentcl pooler of an ST layout; ``hidden_size`` (the backbone's) decides whether Dense 0 is a head."""
    if layout.pooling_mode == "mean":
        return "avg"
    head_first = bool(layout.dense) and hidden_size is not None and is_head_like(layout.dense[0], hidden_size)
    return "cls" if head_first else "cls_before_pooler"


# ---------------------------------------------------------------------------------------------- writing


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def write_dense(layer: nn.Linear, activation: str, folder: Path) -> None:
    """One ST Dense module folder: config.json + model.safetensors (linear.weight, linear.bias)."""
    folder.mkdir(parents=True, exist_ok=True)
    act_cls = getattr(nn, DENSE_ACTIVATIONS[activation])
    _write_json(
        folder / "config.json",
        {
            "in_features": layer.in_features,
            "out_features": layer.out_features,
            "bias": layer.bias is not None,
            "activation_function": f"{act_cls.__module__}.{act_cls.__name__}",
        },
    )
    tensors = {f"linear.{k}": v.detach().cpu().contiguous() for k, v in layer.state_dict().items()}
    save_file(tensors, str(folder / "model.safetensors"))


def remove_st_files(folder: Path) -> None:
    """Remove the files that make ST load a folder its own way (a stale modules.json would be wrong)."""
    for name in (MODULES_JSON, ST_CONFIG, ST_MODEL_CONFIG):
        (folder / name).unlink(missing_ok=True)


def write_st_files(encoder: Any, folder: Path) -> list[str]:
    """Write the Dense folders of ``encoder.dense`` and, where ST can express the pooler, the ST layout.

    Returns the folder names of ``encoder.dense`` (in order), which sentcl.json records.
    """
    hidden = encoder.backbone.config.hidden_size
    inference_pooler = (
        "cls_before_pooler" if encoder.pooler == "cls" and encoder.mlp_only_train else encoder.pooler
    )
    modules: list[dict[str, Any]] = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]

    def add(kind: str) -> str:
        idx = len(modules)
        modules.append(
            {
                "idx": idx,
                "name": str(idx),
                "path": f"{idx}_{kind}",
                "type": f"sentence_transformers.models.{kind}",
            }
        )
        return f"{idx}_{kind}"

    if inference_pooler == "cls" and encoder.head is not None:
        write_dense(encoder.head.dense, encoder.head.activation, folder / add("Dense"))
    tail = []
    for layer in encoder.dense:
        tail.append(add("Dense"))
        write_dense(layer.linear, layer.activation, folder / tail[-1])
    mode = ST_POOLING_OF.get(inference_pooler)
    if mode is None:
        remove_st_files(folder)
        logger.warning(
            "%s: no sentence-transformers files written: pooler %r has no sentence-transformers Pooling "
            "equivalent; load the folder with sentcl (SentenceTransformer would fall back to mean pooling)",
            folder,
            encoder.pooler,
        )
        return tail
    if encoder.normalize_output:
        (folder / add("Normalize")).mkdir(exist_ok=True)
    (folder / "1_Pooling").mkdir(exist_ok=True)
    pooling = {
        "word_embedding_dimension": hidden,
        **{key: key_mode == mode for key, key_mode in _LEGACY_MODES.items()},
    }
    _write_json(folder / "1_Pooling" / "config.json", pooling)
    _write_json(folder / ST_CONFIG, {"max_seq_length": encoder.inference_max_length, "do_lower_case": False})
    _write_json(
        folder / ST_MODEL_CONFIG,
        {
            "__version__": {
                "sentence_transformers": ST_WRITTEN_FOR,
                "transformers": transformers.__version__,
                "pytorch": torch.__version__,
            },
            "prompts": {},
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
            "model_type": "SentenceTransformer",
        },
    )
    _write_json(folder / MODULES_JSON, modules)
    return tail
