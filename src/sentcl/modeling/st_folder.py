"""Reading a sentence-transformers folder into sentcl's parts (the writing side is st_write.py).

A sentence-transformers (ST) folder lists its modules in ``modules.json``: a Transformer, a Pooling
module, then optional Dense modules and a Normalize module. sentcl reads:

- Pooling ``mean`` -> pooler ``avg``; ``cls`` -> ``cls`` when the first Dense module is an H -> H layer with
  Tanh or LeakyReLU (it becomes the MLP head), else ``cls_before_pooler``. Other modes (max, lasttoken,
  weightedmean, mean_sqrt_len_tokens, several modes at once) are refused with a clear error.
- Dense -> ``DenseLayer`` (any size; Tanh, LeakyReLU, Identity, ReLU, GELU or Sigmoid), Normalize -> an L2
  normalisation of the output, Dropout -> nothing (it is the identity at inference).
- ``sentence_bert_config.json``'s ``max_seq_length`` -> the inference truncation.

Every Dense module's weights must match its ``config.json`` and the modules must chain: module i's
``in_features`` is the width module i-1 gives (the backbone's hidden size for the first); a mismatch is an
error naming the module's file (``check_dense_chain``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sentcl.files.pathcheck import inside_folder
from sentcl.files.paths import ModelFolderError
from sentcl.files.read import read_json
from sentcl.modeling.heads import ACTIVATIONS, DENSE_ACTIVATIONS, DenseLayer
from sentcl.modeling.weights import load_checked, read_weights

MODULES_JSON = "modules.json"
ST_CONFIG = "sentence_bert_config.json"
# ST's boolean spellings of its pooling modes (what 3.x writes; 6.x still reads them)
LEGACY_MODES = {
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
        modes = [m for key, m in LEGACY_MODES.items() if config.get(key)]
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
    weights_file, weights = read_weights(folder, "a Dense module")
    wanted = {k: v for k, v in weights.items() if k.startswith("linear.")}
    load_checked(layer, weights_file, wanted, f"{config_file} (in_features {in_f}, out_features {out_f})")
    layer.source = str(config_file)
    return layer


def check_dense_chain(width: int, dense: list[DenseLayer], first: str) -> int:
    """Each Dense layer takes the width the previous part gives (``width`` from ``first``, e.g. the backbone's
    hidden size); a layer that does not is an error naming its file. Returns the final width."""
    source = first
    for layer in dense:
        if layer.linear.in_features != width:
            raise ModelFolderError(
                f"{layer.source or 'a Dense module'}: in_features {layer.linear.in_features} does not match the "
                f"{width} values it receives ({source})"
            )
        width, source = layer.linear.out_features, f"out_features of {layer.source or 'the previous Dense'}"
    return width


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
        sub = inside_folder(
            folder, str(entry.get("path", "")), f"{modules_file}: module {i}", ModelFolderError
        )
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
