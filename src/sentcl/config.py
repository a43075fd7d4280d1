"""Typed configuration: dataclasses with a help line per field, YAML files and ``key=value`` overrides.

Every field carries ``metadata["help"]``; the CLI prints these. Checks live in
``__post_init__`` so that a bad value fails before any work starts, and an
unknown key lists the valid ones.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

import yaml

T = TypeVar("T")


def opt(default: Any, help: str, **kw: Any) -> Any:  # noqa: A002 - mirrors argparse
    """A dataclass field with a help line."""
    if isinstance(default, list | dict):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help}, **kw)
    return field(default=default, metadata={"help": help}, **kw)


class ConfigError(ValueError):
    """A configuration key or value is invalid."""


def _choice(name: str, value: Any, valid: typing.Iterable[Any]) -> None:
    valid = list(valid)
    if value not in valid:
        raise ConfigError(f"{name}={value!r} is not valid; choose one of: {', '.join(map(str, valid))}")


def _positive(name: str, value: float | int | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{name}={value!r} is not a finite number")
    if value is None or value <= 0:
        raise ConfigError(f"{name} must be positive, got {value!r}")


POOLERS = ("cls", "cls_before_pooler", "avg", "avg_top2", "avg_first_last")


@dataclass
class ModelConfig:
    name_or_path: str = opt("all-MiniLM-L6-v2", "Hugging Face hub id, local folder, or offline short name.")
    pooler: str | None = opt(
        None,
        f"Pooler: one of {', '.join(POOLERS)}; 'cls' adds the MLP head. null: the start model's own (a "
        "sentence-transformers folder's Pooling, a sentcl folder's saved pooler), else cls.",
    )
    mlp_only_train: bool = opt(False, "With pooler 'cls': use the MLP head in training only (unsup. SimCSE).")
    dropout: float | None = opt(
        None, "Dropout rate for hidden and attention layers; null keeps the model's own."
    )
    max_length: int = opt(32, "Maximum tokens per sentence in training (longer ones are truncated).")
    same_dropout_mask: bool = opt(
        False, "Both views share one dropout mask (the paper's 'fixed 0.1' collapse case)."
    )
    two_encoders: bool = opt(False, "Separate encoders: f for view 0 (anchor), g for the other views.")
    dual_embedding: str = opt("f", "Inference embedding of a two-encoder model: f, or concat ([f(s); g(s)]).")

    def __post_init__(self) -> None:
        if self.pooler is not None:
            _choice("model.pooler", self.pooler, POOLERS)
        _choice("model.dual_embedding", self.dual_embedding, ("f", "concat"))
        _positive("model.max_length", self.max_length)
        if self.dropout is not None and not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"model.dropout must be in [0, 1), got {self.dropout!r}")


@dataclass
class DataConfig:
    data_dir: str | None = opt(None, "Data folder (SentEval layout); default $SENTCL_DATA or ../shared/data.")
    train_file: str = opt(
        "corpora/wiki1m_prefix.txt", "Training corpus, absolute or relative to the data folder."
    )
    reader: str | None = opt(None, "Reader of the training file (lines, ...); null: the method's own.")
    max_examples: int | None = opt(None, "Use only the first N training examples (null: all).")
    streaming: bool = opt(
        False,
        "Read the training file line by line from disk (line index + token ids cached on disk) instead of "
        "loading it: for corpora larger than memory; reader 'lines' only.",
    )
    cache_dir: str | None = opt(
        None, "Cache folder of streaming corpora (default $SENTCL_CACHE or ~/.cache/sentcl)."
    )
    no_duplicates_in_batch: bool = opt(False, "Keep identical texts out of the same batch (false negatives).")
    augmentation: str | None = opt(
        None,
        "Text augmentation of the positive view: crop, word_deletion, delete_one_word, "
        "synonym_replacement, mlm_replacement (null: none, dropout only).",
    )
    augmentation_rate: float = opt(0.1, "Fraction k of words the text augmentation crops/deletes/replaces.")
    token_augmentation: str | None = opt(
        None,
        "ConSERT augmentation of the positive view: token_shuffle, token_cutoff, span_cutoff, feature_cutoff.",
    )
    token_augmentation_rate: float = opt(
        0.1, "Fraction of tokens (or feature dims) the token augmentation cuts."
    )
    cutoff_token: str = opt(
        "unk", "Token that replaces cut-off tokens: unk, pad or mask (never [CLS]/[SEP])."
    )
    mlm_augmentation_model: str | None = opt(
        None, "Masked-LM for mlm_replacement (null: the encoder's own checkpoint)."
    )
    wordnet_dir: str | None = opt(
        None, "WordNet dict folder for synonym_replacement (default $SENTCL_WORDNET or /usr/share/wordnet)."
    )
    next_sentence_window: int = opt(
        1, "next_sentence: positive is s_(i+1) (1) or one of the next 3 sentences (3)."
    )
    use_neutral: bool = opt(
        False, "Supervised: neutral hypotheses as extra hard negatives (needs them in the data)."
    )

    def __post_init__(self) -> None:
        _positive("data.max_examples", self.max_examples, allow_none=True)
        _choice("data.cutoff_token", self.cutoff_token, ("unk", "pad", "mask"))
        _choice("data.next_sentence_window", self.next_sentence_window, (1, 3))
        for name in ("augmentation_rate", "token_augmentation_rate"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"data.{name} must be in [0, 1), got {getattr(self, name)!r}")


@dataclass
class ObjectiveConfig:
    name: str = opt("unsup_simcse", "Training method (views + objective), e.g. unsup_simcse.")
    temperature: float = opt(0.05, "Temperature tau of InfoNCE: logits are cos(h_i, h_j) / tau.")
    hard_negative_weight: float = opt(
        0.0,
        "Supervised: w added to the logit of the anchor's own hard negative (alpha = e^w; 0 is alpha = 1).",
    )
    margin: float = opt(
        0.0,
        "cutoff_triplet: margin m of max(0, m + sim(s, s**) - sim(s, s*)); the paper prints none (0), "
        "our weak_positive recipe uses 0.2.",
    )
    triplet_form: str = opt(
        "paper",
        "cutoff_triplet: 'paper' (NT-Xent on (s, s) with dropout + triplet on s*, s**; 4 views) or "
        "'weak_positive' (ours: InfoNCE with the weak view s* as positive; 3 views).",
    )
    triplet_weight: float = opt(1.0, "cutoff_triplet: weight of the triplet term added to InfoNCE.")
    weak_cutoff: float = opt(0.1, "cutoff_triplet: fraction of tokens cut in the weak view s*.")
    strong_cutoff: float = opt(0.2, "cutoff_triplet: fraction of tokens cut in the strong view s**.")
    strong_activation: str = opt(
        "leaky_relu", "cutoff_triplet: head activation of the strong view (tanh or leaky_relu)."
    )
    context_size: int = opt(1, "quick_thoughts: neighbours on each side that are targets.")
    quick_thoughts_reduction: str = opt(
        "pairs",
        "quick_thoughts: 'pairs' (one cross-entropy per (sentence, neighbour), the paper), 'rows' (unit "
        "target mass spread over a row's neighbours, the authors' code) or 'kl' (KL(targets || softmax), seed 002).",
    )
    quick_thoughts_diagonal: str = opt(
        "mask",
        "quick_thoughts: the source sentence's own score: 'mask' (-inf) or 'zero' (0, in the softmax).",
    )
    similarity: str = opt(
        "cosine",
        "unsup_simcse / sup_simcse / sup_pairs: logits are cos(h_i, h_j) / tau ('cosine', the paper) or "
        "h_i . h_j / tau ('dot', SimCSE Table D.1's N/A column, with tau = 1).",
    )
    symmetric: bool = opt(
        False,
        "unsup_simcse: seed 004's symmetric loss (views interleaved, 2N x 2N cosine matrix with the diagonal "
        "masked, cross-entropy for every row); not the paper's eq. 1.",
    )
    mlm_weight: float = opt(0.0, "Auxiliary MLM loss weight lambda (SimCSE uses 0.1; 0 disables).")
    mlm_probability: float = opt(0.15, "Fraction of tokens masked for the auxiliary MLM loss.")
    mlm_new_head: bool = opt(False, "Allow a freshly initialised MLM head when the checkpoint has none.")

    def __post_init__(self) -> None:
        _positive("objective.temperature", self.temperature)
        _positive("objective.context_size", self.context_size)
        _choice("objective.strong_activation", self.strong_activation, ("tanh", "leaky_relu"))
        _choice("objective.triplet_form", self.triplet_form, ("paper", "weak_positive"))
        _choice("objective.quick_thoughts_reduction", self.quick_thoughts_reduction, ("pairs", "rows", "kl"))
        _choice("objective.quick_thoughts_diagonal", self.quick_thoughts_diagonal, ("mask", "zero"))
        _choice("objective.similarity", self.similarity, ("cosine", "dot"))
        if self.margin < 0:
            raise ConfigError(f"objective.margin must be >= 0, got {self.margin!r}")
        if self.mlm_weight < 0:
            raise ConfigError(f"objective.mlm_weight must be >= 0, got {self.mlm_weight!r}")
        if not 0.0 < self.mlm_probability < 1.0:
            raise ConfigError(f"objective.mlm_probability must be in (0, 1), got {self.mlm_probability!r}")


@dataclass
class TrainingConfig:
    output_dir: str = opt("runs/unsup_simcse", "Run folder: metrics, checkpoints, best model.")
    batch_size: int = opt(64, "Sentences (not views) per batch.")
    learning_rate: float = opt(3e-5, "Peak learning rate of AdamW.")
    weight_decay: float = opt(0.0, "AdamW weight decay (biases and LayerNorm excluded).")
    epochs: int = opt(1, "Passes over the training data.")
    max_steps: int | None = opt(None, "Stop after this many optimizer steps (null: run all epochs).")
    warmup_steps: int = opt(0, "Linear warm-up steps before the linear decay.")
    max_grad_norm: float = opt(1.0, "Gradient clipping by global norm (0 disables).")
    seed: int = opt(42, "Random seed for sampling, dropout and head initialisation.")
    eval_steps: int = opt(125, "Evaluate STS-B dev every N steps and keep the best checkpoint (0: never).")
    log_steps: int = opt(10, "Write a metrics line every N steps.")
    save_steps: int = opt(125, "Write a resumable checkpoint every N steps (0: only at the end).")
    num_threads: int | None = opt(None, "torch CPU threads (null: torch's default).")
    device: str = opt("auto", "Device: auto (cuda if available, else cpu), cpu, cuda, cuda:N.")
    precision: str = opt("fp32", "fp32, or autocast in bf16 (CPU or GPU) / fp16 (GPU, with loss scaling).")
    progress: bool = opt(True, "Show a progress bar.")
    gradient_cache_chunk: int = opt(
        0,
        "GradCache: embed the batch without gradients, then re-run chunks of this many sentences with "
        "gradients (peak memory of one chunk, one more forward pass); 0: off.",
    )
    fused_optimizer: bool = opt(
        False, "AdamW's fused kernel (torch's fused=True): one pass over the weights."
    )
    report_to: str = opt(
        "none",
        "Experiment tracking: none, tensorboard (<output_dir>/tensorboard), wandb or mlflow (if installed).",
    )

    def __post_init__(self) -> None:
        _positive("training.batch_size", self.batch_size)
        _positive("training.learning_rate", self.learning_rate)
        _positive("training.epochs", self.epochs)
        _positive("training.max_steps", self.max_steps, allow_none=True)
        _positive("training.num_threads", self.num_threads, allow_none=True)
        _choice("training.precision", self.precision, ("fp32", "bf16", "fp16"))
        _choice("training.report_to", self.report_to, ("none", "tensorboard", "wandb", "mlflow"))
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ConfigError(
                f"training.device={self.device!r} is not valid; choose auto, cpu, cuda or cuda:N"
            )
        for name in ("eval_steps", "log_steps", "save_steps", "warmup_steps", "gradient_cache_chunk"):
            if getattr(self, name) < 0:
                raise ConfigError(f"training.{name} must be >= 0, got {getattr(self, name)!r}")


# the tasks sentcl.evaluation.runner.DEV_SCORES reads one number from (kept equal by a reliability test)
DEV_TASKS = ("stsb_dev", "dev")
# dev tasks on the user's own data, PREFIX:PATH (sentcl.evaluation.runner.DEV_PREFIXES): pairs:FILE, retrieval:DIR
DEV_TASK_PREFIXES = ("pairs", "retrieval")


@dataclass
class EvalConfig:
    dev_task: str = opt("stsb_dev", "Task scored during training to pick the best checkpoint.")
    final_tasks: list[str] = opt(["sts"], "Tasks evaluated on the best model after training (sts, dev, ...).")
    batch_size: int = opt(128, "Sentences per encoding batch during evaluation.")
    track_alignment_uniformity: bool = opt(
        False, "Also log alignment/uniformity on STS-B dev at step 0 and every eval (the paper's Figure 2)."
    )
    compare_with_start: bool = opt(
        False, "Also evaluate the starting model on final_tasks, for a side-by-side table."
    )
    transfer_protocol: str = opt(
        "senteval",
        "Classifier of the transfer tasks: senteval (SentEval's PyTorch logistic regression, as SimCSE reports) "
        "or sklearn (ours: scikit-learn's logistic regression with a C grid).",
    )

    def __post_init__(self) -> None:
        _positive("eval.batch_size", self.batch_size)
        _choice("eval.transfer_protocol", self.transfer_protocol, ("senteval", "sklearn"))
        prefix, colon, path = self.dev_task.partition(":")
        if colon and prefix in DEV_TASK_PREFIXES:
            if not path.strip():
                raise ConfigError(f"eval.dev_task={self.dev_task!r} needs a path, e.g. {prefix}:path/to/dev")
        else:
            _choice("eval.dev_task", self.dev_task, (*DEV_TASKS, *(f"{p}:PATH" for p in DEV_TASK_PREFIXES)))


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig, metadata={"help": "Encoder and pooler."})
    data: DataConfig = field(default_factory=DataConfig, metadata={"help": "Training data."})
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig, metadata={"help": "Method."})
    training: TrainingConfig = field(default_factory=TrainingConfig, metadata={"help": "Optimisation."})
    eval: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "Evaluation."})


# --------------------------------------------------------------------------- building from dicts


def _type_ok(value: Any, annotation: Any) -> bool:
    origin = get_origin(annotation)
    if annotation is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in get_args(annotation))
    if annotation is type(None):
        return value is None
    if origin is Literal:
        return value in get_args(annotation)
    if origin is list:
        (inner,) = get_args(annotation) or (Any,)
        return isinstance(value, list) and all(_type_ok(v, inner) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, annotation)


def _coerce(value: Any, annotation: Any) -> Any:
    """An int where a float (or float | None) is expected becomes a float."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    origin = get_origin(annotation)
    float_ok = annotation is float or (
        origin in (typing.Union, types.UnionType) and float in get_args(annotation)
    )
    return float(value) if is_int and float_ok else value


def _float_from_text(value: Any, annotation: Any) -> Any:
    """Text that ``float()`` reads, where a float is expected, becomes that float: YAML 1.1 reads ``1e-5``
    (no dot) as a string."""
    if not isinstance(value, str) or not _type_ok(0.5, annotation) or _type_ok(value, annotation):
        return value
    try:
        return float(value)
    except ValueError:
        return value


def from_dict(cls: type[T], data: dict[str, Any], where: str = "") -> T:
    """Build dataclass ``cls`` from nested dicts; unknown keys and wrong types are ConfigErrors."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'} must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{where}.{key}" if where else key
        if key not in fields:
            raise ConfigError(f"unknown config key {name!r}; valid keys here: {', '.join(fields)}")
        annotation = hints[key]
        if dataclasses.is_dataclass(annotation):
            kwargs[key] = from_dict(annotation, value or {}, name)  # type: ignore[arg-type]
            continue
        value = _float_from_text(value, annotation)
        if not _type_ok(value, annotation):
            raise ConfigError(f"{name}={value!r} has the wrong type; expected {_type_name(annotation)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{name}={value!r} is not a finite number")
        kwargs[key] = _coerce(value, annotation)
    return cls(**kwargs)


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def flatten(data: typing.Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict as dotted keys: ``{"training": {"seed": 1}}`` -> ``{"training.seed": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, typing.Mapping):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def changed_settings(saved: typing.Mapping[str, Any], cfg: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Dotted keys whose value in a saved config (``config.json``'s dict) differs from ``cfg``, as
    key -> (saved value, value now), in the saved file's key order; a key the saved config lacks (a setting
    added to sentcl after the run) counts as its default value."""
    old = {**flatten(to_dict(TrainConfig())), **flatten(saved)}
    new = flatten(to_dict(cfg))
    return {k: (old.get(k), new.get(k)) for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)}


def parse_override(text: str) -> tuple[list[str], Any]:
    """``'training.batch_size=32'`` -> (['training', 'batch_size'], 32); the value is parsed as YAML."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like section.key=value")
    key, raw = text.split("=", 1)
    value = yaml.safe_load(raw) if raw.strip() else None
    return key.strip().split("."), value


def merge_override(data: dict[str, Any], keys: list[str], value: Any) -> None:
    node = data
    for key in keys[:-1]:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"cannot set {'.'.join(keys)}: {key} is not a section")
    node[keys[-1]] = value


def load_config(cls: type[T], path: str | Path | None = None, overrides: typing.Sequence[str] = ()) -> T:
    """Load ``cls`` from a YAML file (optional) and apply ``key=value`` overrides in order."""
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"config file {path} is not valid YAML: {err}") from err
        if not isinstance(data, dict):
            raise ConfigError(
                f"config file {path} must be a mapping of sections (model:, data:, training:, ...) at the top "
                f"level, got a {type(data).__name__}"
            )
    for text in overrides:
        keys, value = parse_override(text)
        merge_override(data, keys, value)
    try:
        return from_dict(cls, data)
    except ConfigError as err:
        where = f" (in {path})" if path is not None else ""
        raise ConfigError(f"{err}{where}") from None


def describe(cls: type[Any], prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, help) for every leaf field, for --help listings."""
    rows: list[tuple[str, str, str]] = []
    hints = typing.get_type_hints(cls)
    instance = cls()
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(hints[f.name]):
            rows.extend(describe(hints[f.name], key + "."))
        else:
            rows.append((key, repr(getattr(instance, f.name)), f.metadata.get("help", "")))
    return rows
