"""Typed configuration: the sections of a training recipe (model, data, training, eval, objective).

Every field carries ``metadata["help"]``; the CLI prints these. Two more flags in the metadata carry the
rules about a field: ``method_scoped`` (only the methods that list the key in their options' ``uses`` read it:
a non-default value under another method is an error, sentcl.training.validation) and ``resume_safe`` (``--resume`` may
change it, sentcl.training.run_folder). Checks live in ``__post_init__`` so that a bad value fails before any
work starts, and an unknown key lists the valid ones; the rules that span sections live in
:mod:`sentcl.training.validation`. The generic dataclass <-> dict machinery is :mod:`sentcl.config.typed`; the
``objective:`` section is the chosen method's options class (:mod:`sentcl/methods/<name>/options.py`), found by name in the
method records (:mod:`sentcl.config.method_catalogue`). Torch-free: reading a recipe imports no method code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from sentcl.config.eval_section import EvalConfig
from sentcl.config.method_catalogue import (
    describe_objective,
    objective_options,
    unknown_objective_key,
)
from sentcl.config.names import ENGINE_NAMES
from sentcl.config.objective import ObjectiveConfig
from sentcl.config.poolers import POOLERS  # the one pooler table
from sentcl.config.prompt_templates import DENOISE_MODES, check_template
from sentcl.config.teacher import TeacherConfig, parse_teachers
from sentcl.config.typed import (
    ConfigError,
    check_choice,
    check_max_length,
    check_positive,
    opt,
)
from sentcl.defaults import (
    DATA_ENV,
    OUTPUT_DIM_INITS,
    TEACHER_CACHE_SUBDIR,
    TEACHER_MAPPINGS,
    TRAIN_MAX_LENGTH,
)
from sentcl.files.read import preview
from sentcl.files.slots import FolderOwn, FolderRead, ModelRef, PathRead


@dataclass
class ModelConfig:
    name_or_path: ModelRef = opt(
        "all-MiniLM-L6-v2", "Hugging Face hub id, local folder, or offline short name."
    )
    pooler: str | None = opt(
        None,
        f"Pooler: one of {', '.join(POOLERS)}; 'cls' adds the MLP head. null: the start model's own (a "
        "sentence-transformers folder's Pooling, a sentcl folder's saved pooler), else cls.",
    )
    mlp_only_train: bool = opt(False, "With pooler 'cls': use the MLP head in training only (unsup. SimCSE).")
    dropout: float | None = opt(
        None, "Dropout rate for hidden and attention layers; null keeps the model's own."
    )
    max_length: int = opt(
        TRAIN_MAX_LENGTH, "Maximum tokens per sentence in training (longer ones are truncated)."
    )
    same_dropout_mask: bool = opt(
        False,
        "Both views share one dropout mask (the paper's 'fixed 0.1' collapse case).",
        method_scoped=True,
    )
    two_encoders: bool = opt(
        False,
        "Separate encoders f and g; the method names the encoder of each view (f for the anchor).",
        method_scoped=True,
    )
    dual_embedding: str = opt(
        "f", "Inference embedding of a two-encoder model: f, or concat ([f(s); g(s)]).", method_scoped=True
    )
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
    student_layers: list[int] | None = opt(
        None,
        "A student of the start model's transformer layers at these indices, e.g. [0, 2, 4] (strictly "
        "increasing; as sentence-transformers' distillation example builds it). null: every layer.",
    )
    student_ffn: int | None = opt(
        None,
        "A student whose every layer keeps this many of its feed-forward neurons (the intermediate width), "
        "those of largest importance on the training corpus: their mean |activation| times their output "
        "weights' norm (our reading of DynaBERT's neuron ranking, Hou et al. 2020). null: every neuron.",
    )
    output_dim: int | None = opt(
        None,
        "Add a trainable Dense layer (identity activation) mapping the pooled vector to this size, saved as a "
        "sentence-transformers Dense module (before the model's normalisation). null: none.",
    )
    output_dim_init: str = opt(
        OUTPUT_DIM_INITS[0],
        "How model.output_dim's Dense layer starts: pca (the top principal directions of the start model's "
        "vectors of the training corpus, y = W (x - mu)) or random (nn.Linear's initialisation).",
    )
    teacher: list[TeacherConfig] | None = opt(
        None,
        "Teacher(s) of a distillation method: a model (any folder sentcl opens, a hub id or short name), a list "
        "of them, or a list of mappings {path, weight (> 0), pooler, max_length}. Their vectors of the "
        "training corpus are encoded once and cached (model.teacher_cache).",
        method_scoped=True,
        parse=parse_teachers,
    )
    teacher_mapping: str = opt(
        "projection",
        "When the teacher's width differs from the student's: 'projection' (a linear map of the student's "
        "vector into the teacher's space, trained with the student, not saved in the model) or 'pca' (the "
        "teacher's vectors reduced by PCA, fitted on the corpus' teacher vectors, to the student's width).",
        method_scoped=True,
    )
    teacher_cache: FolderRead | None = opt(
        None,
        f"Folder of cached teacher vectors (null: $SENTCL_CACHE/{TEACHER_CACHE_SUBDIR}, else "
        f"~/.cache/sentcl/{TEACHER_CACHE_SUBDIR}); read by the methods that distil a teacher.",
        resume_safe=True,
    )
    teacher_engine: str = opt(
        "local",
        "Where a teacher encodes the corpus into its cache: local (in this process, or in every process of a "
        "torchrun, on the run's device) or ray (a Ray Data actor pool, the teacher once per actor, GPUs where "
        "the cluster has them; sentcl.engines). The vectors are the same either way.",
        resume_safe=True,
    )
    teacher_ray_address: str | None = opt(
        None,
        "With model.teacher_engine=ray: the Ray cluster (host:port, ray://host:port or auto); null: a local "
        "Ray, started for the encode and stopped after it.",
        resume_safe=True,
    )
    generator: ModelRef | None = opt(
        None,
        "DiffCSE's frozen masked-LM generator G: a Hugging Face folder or hub id with an MLM head and the "
        "encoder's vocabulary (the paper: distilbert-base-uncased for BERT).",
        method_scoped=True,
    )

    def __post_init__(self) -> None:
        self.teacher = parse_teachers(self.teacher)
        check_choice("model.teacher_mapping", self.teacher_mapping, TEACHER_MAPPINGS)
        check_choice("model.output_dim_init", self.output_dim_init, OUTPUT_DIM_INITS)
        check_choice("model.teacher_engine", self.teacher_engine, ENGINE_NAMES)
        if self.teacher_ray_address is not None and self.teacher_engine != "ray":
            raise ConfigError(
                f"model.teacher_ray_address {self.teacher_ray_address!r} needs model.teacher_engine=ray "
                f"(it is {self.teacher_engine})"
            )
        check_positive("model.output_dim", self.output_dim, allow_none=True)
        check_positive("model.student_ffn", self.student_ffn, allow_none=True)
        if self.student_ffn is not None and self.two_encoders:
            raise ConfigError("model.student_ffn applies to one encoder, not model.two_encoders")
        if self.student_layers is not None:
            ok = isinstance(self.student_layers, list) and all(
                isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in self.student_layers
            )
            if not ok or not self.student_layers:
                raise ConfigError(
                    f"model.student_layers must be a non-empty list of layer indices (0, 1, ...), got "
                    f"{self.student_layers!r}"
                )
            if any(b <= a for a, b in zip(self.student_layers, self.student_layers[1:], strict=False)):
                raise ConfigError(
                    f"model.student_layers {self.student_layers} must be strictly increasing (no repeats): the "
                    "student keeps the layers in the model's order"
                )
        if self.output_dim is not None and self.two_encoders:
            raise ConfigError("model.output_dim applies to one encoder, not model.two_encoders")
        if self.pooler is not None:
            check_choice("model.pooler", self.pooler, POOLERS)
        check_choice("model.prompt_denoise", self.prompt_denoise, DENOISE_MODES)
        if self.prompt_templates is not None:
            if self.pooler != "mask":
                raise ConfigError(
                    "model.prompt_templates needs model.pooler=mask (PromptBERT's [MASK] state)"
                )
            for template in self.prompt_templates:
                try:
                    check_template(template)
                except ValueError as err:
                    raise ConfigError(f"model.prompt_templates: {err}") from None
        check_choice("model.dual_embedding", self.dual_embedding, ("f", "concat"))
        check_max_length("model.max_length", self.max_length)
        if self.dropout is not None and not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"model.dropout must be in [0, 1), got {self.dropout!r}")


@dataclass
class DataConfig:
    data_dir: FolderRead | None = opt(
        None,
        f"Data folder (SentEval layout); default ${DATA_ENV}, else $XDG_CACHE_HOME/sentcl/data (~/.cache/sentcl/data).",
        resume_safe=True,
    )
    train_file: PathRead = opt(
        "corpora/wiki1m_prefix.txt",
        "Training corpus: absolute, or relative to the working folder (looked up first) or the data folder.",
    )
    reader: str | None = opt(None, "Reader of the training file (lines, ...); null: the method's own.")
    max_examples: int | None = opt(None, "Use only the first N training examples (null: all).")
    streaming: bool = opt(
        False,
        "Read the training file line by line from disk (line index + token ids cached on disk) instead of "
        "loading it: for corpora larger than memory; reader 'lines' only.",
    )
    cache_dir: FolderRead | None = opt(
        None,
        "Cache folder of streaming corpora (default $SENTCL_CACHE or ~/.cache/sentcl).",
        resume_safe=True,
    )
    no_duplicates_in_batch: bool = opt(False, "Keep identical texts out of the same batch (false negatives).")
    augmentation: str | None = opt(
        None,
        "Text augmentation of the positive view: crop, word_deletion, delete_one_word, "
        "synonym_replacement, mlm_replacement (null: none, dropout only).",
        method_scoped=True,
    )
    augmentation_rate: float = opt(
        0.1, "Fraction k of words the text augmentation crops/deletes/replaces.", method_scoped=True
    )
    token_augmentation: str | None = opt(
        None,
        "ConSERT augmentation of the positive view: token_shuffle, token_cutoff, span_cutoff, feature_cutoff.",
        method_scoped=True,
    )
    token_augmentation_rate: float = opt(
        0.1, "Fraction of tokens (or feature dims) the token augmentation cuts.", method_scoped=True
    )
    cutoff_token: str = opt(
        "unk", "Token that replaces cut-off tokens: unk, pad or mask (never [CLS]/[SEP]).", method_scoped=True
    )
    mlm_augmentation_model: ModelRef | None = opt(
        None, "Masked-LM for mlm_replacement (null: the encoder's own checkpoint).", method_scoped=True
    )
    wordnet_dir: FolderRead | None = opt(
        None,
        "WordNet dict folder for synonym_replacement (default $SENTCL_WORDNET or /usr/share/wordnet).",
        method_scoped=True,
    )
    next_sentence_window: int = opt(
        1, "next_sentence: positive is s_(i+1) (1) or one of the next 3 sentences (3).", method_scoped=True
    )
    use_neutral: bool = opt(
        False,
        "Supervised: neutral hypotheses as extra hard negatives (needs them in the data).",
        method_scoped=True,
    )
    negation_file: PathRead | None = opt(
        None,
        "sncse: a TSV of 'sentence<TAB>negation' lines giving every training sentence's negation (null: our "
        "rule-based English negator, sentcl.data.negation).",
        method_scoped=True,
    )

    def __post_init__(self) -> None:
        check_positive("data.max_examples", self.max_examples, allow_none=True)
        check_choice("data.cutoff_token", self.cutoff_token, ("unk", "pad", "mask"))
        check_choice("data.next_sentence_window", self.next_sentence_window, (1, 3))
        for name in ("augmentation_rate", "token_augmentation_rate"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"data.{name} must be in [0, 1), got {getattr(self, name)!r}")


#: the largest seed (numpy's and torch's generators take 0 .. 2**32 - 1)
SEED_MAX = 2**32 - 1


@dataclass
class TrainingConfig:
    output_dir: FolderOwn = opt(
        "runs/unsup_simcse", "Run folder: metrics, checkpoints, best model.", resume_safe=True
    )
    batch_size: int = opt(64, "Sentences (not views) per batch.")
    learning_rate: float = opt(3e-5, "Peak learning rate of AdamW.")
    weight_decay: float = opt(0.0, "AdamW weight decay (biases and LayerNorm excluded).")
    epochs: int = opt(1, "Passes over the training data.", resume_safe=True)
    max_steps: int | None = opt(
        None, "Stop after this many optimizer steps (null: run all epochs).", resume_safe=True
    )
    warmup_steps: int = opt(0, "Linear warm-up steps before the linear decay.")
    max_grad_norm: float = opt(1.0, "Gradient clipping by global norm (0 disables).")
    seed: int = opt(42, "Random seed for sampling, dropout and head initialisation (0 to 2**32 - 1).")
    eval_steps: int = opt(
        125,
        "Evaluate the dev task every N steps (and after the last step) and keep the best model in best/ "
        "(0: no dev evaluation at all; the last step's model becomes best/, best_dev_score null).",
        resume_safe=True,
    )
    log_steps: int = opt(10, "Write a metrics line every N steps.", resume_safe=True)
    save_steps: int = opt(
        125, "Write a resumable checkpoint every N steps (0: only at the end).", resume_safe=True
    )
    num_threads: int | None = opt(None, "torch CPU threads (null: torch's default).", resume_safe=True)
    device: str = opt(
        "auto", "Device: auto (cuda if available, else cpu), cpu, cuda, cuda:N.", resume_safe=True
    )
    precision: str = opt("fp32", "fp32, or autocast in bf16 (CPU or GPU) / fp16 (GPU, with loss scaling).")
    progress: bool = opt(True, "Show a progress bar.", resume_safe=True)
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
        resume_safe=True,
    )
    packed_tokens: bool = opt(
        True,
        "Run a BERT encoder's per-token layers on the batch's real tokens only, padding them only inside "
        "attention (sentcl.modeling.packed; exact, faster on the CPU bench); other architectures and poolers "
        "avg_top2, avg_first_last, mask use the padded forward.",
        resume_safe=True,
    )
    report_to: str = opt(
        "none",
        "Experiment tracking: none, tensorboard (<output_dir>/tensorboard), wandb or mlflow (if installed).",
        resume_safe=True,
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
                f"training.device={preview(self.device)} is not valid; choose auto, cpu, cuda or cuda:N"
            )
        if not 0 <= self.seed <= SEED_MAX:
            raise ConfigError(f"training.seed must be between 0 and 2**32 - 1, got {preview(self.seed)}")
        if not self.output_dir.strip() or os.path.normpath(self.output_dir.strip()) == ".":
            raise ConfigError(
                f"training.output_dir={preview(self.output_dir)} would write the run into the current folder; "
                "name a run folder (e.g. runs/my_run)"
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


@dataclass
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig, metadata={"help": "Encoder and pooler."})
    data: DataConfig = field(default_factory=DataConfig, metadata={"help": "Training data."})
    objective: ObjectiveConfig = field(
        default_factory=lambda: objective_options(ObjectiveConfig.name)(),
        metadata={
            "help": "Method (its options depend on objective.name).",
            "resolve_class": lambda data: objective_options(data.get("name", ObjectiveConfig.name)),
            "unknown_key": lambda key, where, data: unknown_objective_key(key, data),
            "describe": lambda prefix: describe_objective(prefix),
        },
    )
    training: TrainingConfig = field(default_factory=TrainingConfig, metadata={"help": "Optimisation."})
    eval: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "Evaluation."})
