"""Typed configuration: the sections of a training recipe, YAML files and ``key=value`` overrides.

Every field carries ``metadata["help"]``; the CLI prints these. Checks live in ``__post_init__`` so that a bad
value fails before any work starts, and an unknown key lists the valid ones; the rules that span sections live
in :mod:`sentcl.validation`. The generic dataclass <-> dict machinery is :mod:`sentcl.typed_config`, the
method-scoped ``objective:`` section :mod:`sentcl.objective_config` (both re-exported here).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentcl.files import read_yaml
from sentcl.modeling.pooling import POOLERS  # the one pooler list (contract 6)
from sentcl.objective_config import (
    AUGMENTATION_KEYS,
    METHOD_SCOPED_KEYS,
    ObjectiveConfig,
    default_objective,
    drop_other_methods_settings,
    method_scoped_keys,
    objective_option_classes,
    objective_options,
)
from sentcl.typed_config import (
    ConfigError,
    T,
    check_choice,
    check_positive,
    describe_fields,
    flatten,
    from_dict,
    merge_override,
    opt,
    parse_override,
    to_dict,
)

__all__ = [
    "AUGMENTATION_KEYS",
    "METHOD_SCOPED_KEYS",
    "ConfigError",
    "DataConfig",
    "EvalConfig",
    "ModelConfig",
    "ObjectiveConfig",
    "TrainConfig",
    "TrainingConfig",
    "changed_settings",
    "check_choice",
    "check_positive",
    "describe",
    "flatten",
    "from_dict",
    "load_config",
    "merge_override",
    "method_scoped_keys",
    "objective_option_classes",
    "objective_options",
    "opt",
    "parse_override",
    "to_dict",
]


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
    prompt_templates: list[str] | None = opt(
        None,
        'Pooler mask (PromptBERT): templates with [X] (the sentence) and [MASK], e.g. \'This sentence : "[X]" '
        "means [MASK] .'; the first is applied at inference, views use one each. null: PromptBERT's two BERT "
        "templates (or a saved model's own).",
    )
    prompt_denoise: str = opt(
        "train",
        "Pooler mask: PromptBERT's template denoising (subtract the template-only [MASK] state, positions "
        "matched) in training only ('train', the authors' unsupervised BERT run), 'always' (also at "
        "inference) or 'never' (SNCSE's code).",
    )

    def __post_init__(self) -> None:
        if self.pooler is not None:
            check_choice("model.pooler", self.pooler, POOLERS)
        check_choice("model.prompt_denoise", self.prompt_denoise, ("train", "always", "never"))
        if self.prompt_templates is not None:
            if self.pooler != "mask":
                raise ConfigError(
                    "model.prompt_templates needs model.pooler=mask (PromptBERT's [MASK] state)"
                )
            from sentcl.modeling.prompt import check_template

            for template in self.prompt_templates:
                try:
                    check_template(template)
                except ValueError as err:
                    raise ConfigError(f"model.prompt_templates: {err}") from None
        check_choice("model.dual_embedding", self.dual_embedding, ("f", "concat"))
        check_positive("model.max_length", self.max_length)
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
    negation_file: str | None = opt(
        None,
        "sncse: a TSV of 'sentence<TAB>negation' lines giving every training sentence's negation (null: our "
        "rule-based English negator, sentcl.data.negation).",
    )

    def __post_init__(self) -> None:
        check_positive("data.max_examples", self.max_examples, allow_none=True)
        check_choice("data.cutoff_token", self.cutoff_token, ("unk", "pad", "mask"))
        check_choice("data.next_sentence_window", self.next_sentence_window, (1, 3))
        for name in ("augmentation_rate", "token_augmentation_rate"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"data.{name} must be in [0, 1), got {getattr(self, name)!r}")


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
    eval_steps: int = opt(
        125,
        "Evaluate the dev task every N steps (and after the last step) and keep the best model in best/ "
        "(0: no dev evaluation at all; the last step's model becomes best/, best_dev_score null).",
    )
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
    length_buckets: int = opt(
        0,
        "Encode each step's rows in at most this many length-sorted micro-batches, each padded only to its "
        "own longest row (same loss and gradients, less padding); 0: one padded batch, the default because "
        "on the 2-core CPU bench the extra weight-gradient passes cost more than the padding saved "
        "(docs/performance.md).",
    )
    packed_tokens: bool = opt(
        True,
        "Run a BERT encoder's per-token layers on the batch's real tokens only, padding them only inside "
        "attention (sentcl.modeling.packed; exact, faster on the CPU bench); other architectures and poolers "
        "avg_top2, avg_first_last, mask use the padded forward.",
    )
    report_to: str = opt(
        "none",
        "Experiment tracking: none, tensorboard (<output_dir>/tensorboard), wandb or mlflow (if installed).",
    )

    def __post_init__(self) -> None:
        check_positive("training.batch_size", self.batch_size)
        check_positive("training.learning_rate", self.learning_rate)
        check_positive("training.epochs", self.epochs)
        check_positive("training.max_steps", self.max_steps, allow_none=True)
        check_positive("training.num_threads", self.num_threads, allow_none=True)
        check_choice("training.precision", self.precision, ("fp32", "bf16", "fp16"))
        check_choice("training.report_to", self.report_to, ("none", "tensorboard", "wandb", "mlflow"))
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ConfigError(
                f"training.device={self.device!r} is not valid; choose auto, cpu, cuda or cuda:N"
            )
        for name in (
            "eval_steps",
            "log_steps",
            "save_steps",
            "warmup_steps",
            "gradient_cache_chunk",
            "length_buckets",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"training.{name} must be >= 0, got {getattr(self, name)!r}")


def check_dev_task_name(dev_task: str) -> None:
    """A dev task is a task of sentcl.evaluation.runner's registry with a dev split, or PREFIX:PATH (the
    runner's DEV_PREFIXES: pairs:FILE, retrieval:DIR): both lists are the runner's own."""
    from sentcl.evaluation.runner import DEV_PREFIXES, dev_task_names

    default = EvalConfig.dev_task  # listed first
    names = sorted(dev_task_names(), key=lambda name: name != default)
    prefix, colon, path = dev_task.partition(":")
    if colon and prefix in DEV_PREFIXES:
        if not path.strip():
            raise ConfigError(f"eval.dev_task={dev_task!r} needs a path, e.g. {prefix}:path/to/dev")
    else:
        check_choice("eval.dev_task", dev_task, (*names, *(f"{p}:PATH" for p in DEV_PREFIXES)))


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
        check_positive("eval.batch_size", self.batch_size)
        check_choice("eval.transfer_protocol", self.transfer_protocol, ("senteval", "sklearn"))
        check_dev_task_name(self.dev_task)


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig, metadata={"help": "Encoder and pooler."})
    data: DataConfig = field(default_factory=DataConfig, metadata={"help": "Training data."})
    objective: ObjectiveConfig = field(
        default_factory=default_objective,
        metadata={"help": "Method (its options depend on objective.name)."},
    )
    training: TrainingConfig = field(default_factory=TrainingConfig, metadata={"help": "Optimisation."})
    eval: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "Evaluation."})


def changed_settings(saved: typing.Mapping[str, Any], cfg: TrainConfig) -> dict[str, tuple[Any, Any]]:
    """Dotted keys whose value in a saved config (``config.json``'s dict) differs from ``cfg``, as
    key -> (saved value, value now), in the saved file's key order; a key the saved config lacks (a setting
    added to sentcl after the run) counts as its default value. A saved ``objective.*`` key that the method's
    options do not have (runs saved when every method accepted every option) is ignored when it equals the
    default of the method that has it."""
    defaults = TrainConfig(objective=type(cfg.objective)())
    defaults.objective.name = cfg.objective.name
    old = {**flatten(to_dict(defaults)), **flatten(saved)}
    new = flatten(to_dict(cfg))
    if old.get("objective.name") == cfg.objective.name:
        option_defaults = [
            (f"objective.{f.name}", getattr(c(), f.name))
            for c in objective_option_classes().values()
            for f in dataclasses.fields(c)
        ]
        for key in [k for k in old if k.startswith("objective.") and k not in new]:
            if (key, old[key]) in option_defaults:
                del old[key]
    return {k: (old.get(k), new.get(k)) for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)}


def load_config(cls: type[T], path: str | Path | None = None, overrides: typing.Sequence[str] = ()) -> T:
    """Load ``cls`` from a YAML file (optional) and apply ``key=value`` overrides in order. An override of
    ``objective.name`` to another method drops the file's settings of its own method first (any order)."""
    data: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        data = read_yaml(path, "config file", ConfigError)
        if not isinstance(data, dict):
            raise ConfigError(
                f"config file {path} must be a mapping of sections (model:, data:, training:, ...) at the top "
                f"level, got a {type(data).__name__}"
            )
    parsed = [parse_override(text) for text in overrides]
    switched = [value for keys, value in parsed if keys == ["objective", "name"]]
    if cls is TrainConfig and switched:
        drop_other_methods_settings(data, switched[-1])
    for keys, value in parsed:
        merge_override(data, keys, value)
    try:
        return from_dict(cls, data)
    except ConfigError as err:
        where = f" (in {path})" if path is not None else ""
        raise ConfigError(f"{err}{where}") from None


def describe(cls: type[Any], prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, help) for every leaf field, for --help listings; under TrainConfig, a setting only some
    methods read says which."""
    rows = describe_fields(cls, prefix)
    if cls is TrainConfig:
        users = {
            k: [m for m, c in objective_option_classes().items() if k in c.uses] for k in method_scoped_keys()
        }
        rows = [(k, d, f"{h} [{', '.join(users[k])} only]" if users.get(k) else h) for k, d, h in rows]
    return rows
