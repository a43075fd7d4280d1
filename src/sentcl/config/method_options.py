"""Each method's own ``objective:`` options, torch-free: one dataclass per method, checked once here.

The record of each method (``sentcl.config.method_records``) names its options class; the method's builder
(``sentcl.methods.<name>``) receives an instance of it and trusts it. The choice lists and defaults that the
objectives also use (``TRIPLET_FORMS``, ``MIX_PARTNERS``, ``COSENT_SCALE``, ...) live here, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.objective import (
    AUGMENTATION_KEYS,
    TWO_ENCODER_KEYS,
    InfoNCEOptions,
    ObjectiveConfig,
    TemperatureOptions,
    similarity_option,
    temperature_option,
)
from sentcl.config.objective import SIMILARITIES as SIMILARITIES
from sentcl.config.typed import ConfigError, check_choice, check_positive, opt

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig

#: "paper": (s, s', s*, s**) with NT-Xent on (s, s'); "weak_positive" (ours): (s, s*, s**), InfoNCE on (s, s*)
TRIPLET_FORMS = ("paper", "weak_positive")
#: "weak_closer" (default): max(0, m + sim(s, s**) - sim(s, s*)), the weak view kept closer (the paper's stated
#: intent); "as_printed": max(0, m + sim(s, s*) - sim(s, s**)), the order the paper's formula is printed in
TRIPLET_ORDERS = ("weak_closer", "as_printed")
#: seed 003's reported BERT-base temperature (configs/cutoff_triplet_bert_base.yaml; RoBERTa-base: 0.05)
CUTOFF_TRIPLET_TEMPERATURE = 0.07
#: MixCSE's mixing partners: the next sentence of the batch (the paper) or every other one (ours)
MIX_PARTNERS = ("one", "all")
#: CoSENT's lambda (Su 2022: 20)
COSENT_SCALE = 20.0
#: Quick-Thoughts' reductions and diagonal treatments
QT_REDUCTIONS = ("pairs", "rows", "kl")
QT_DIAGONALS = ("mask", "zero")


def _in_unit(name: str, value: float, closed: bool = False) -> None:
    """``value`` in [0, 1) (or [0, 1] with ``closed``)."""
    if not (0.0 <= value <= 1.0 if closed else 0.0 <= value < 1.0):
        raise ConfigError(f"objective.{name} must be in [0, 1{']' if closed else ')'}, got {value!r}")


def _non_negative(name: str, value: float) -> None:
    if value < 0:
        raise ConfigError(f"objective.{name} must be >= 0, got {value!r}")


@dataclass
class UnsupSimCSEOptions(InfoNCEOptions):
    symmetric: bool = opt(
        False,
        "A symmetric loss (views interleaved, 2N x 2N cosine matrix with the diagonal masked, "
        "cross-entropy for every row); not the paper's eq. 1.",
    )

    uses: ClassVar[tuple[str, ...]] = (*AUGMENTATION_KEYS, "model.same_dropout_mask", *TWO_ENCODER_KEYS)

    def check(self, cfg: TrainConfig) -> None:
        d = cfg.data
        if cfg.model.same_dropout_mask and (d.augmentation or d.token_augmentation):
            raise ConfigError("model.same_dropout_mask encodes one view for both: it excludes augmentations")


@dataclass
class SupSimCSEOptions(TemperatureOptions):
    hard_negative_weight: float = opt(
        0.0, "w added to the logit of the anchor's own hard negative (alpha = e^w; 0 is alpha = 1)."
    )
    similarity: str = similarity_option()

    uses: ClassVar[tuple[str, ...]] = ("data.use_neutral",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("objective.similarity", self.similarity, SIMILARITIES)


@dataclass
class SupPairsOptions(InfoNCEOptions):
    pass


@dataclass
class CutoffTripletOptions(TemperatureOptions):
    temperature: float = temperature_option(CUTOFF_TRIPLET_TEMPERATURE)
    margin: float = opt(
        0.0,
        "Margin m of max(0, m + sim(s, s**) - sim(s, s*)); the paper prints none (0), our weak_positive "
        "recipe uses 0.2.",
    )
    triplet_form: str = opt(
        "paper",
        "'paper' (NT-Xent on (s, s) with dropout + triplet on s*, s**; 4 views) or 'weak_positive' (ours: "
        "InfoNCE with the weak view s* as positive; 3 views).",
    )
    triplet_weight: float = opt(1.0, "Weight of the triplet term added to InfoNCE.")
    weak_cutoff: float = opt(0.1, "Fraction of tokens cut in the weak view s*.")
    strong_cutoff: float = opt(0.2, "Fraction of tokens cut in the strong view s** (more than weak_cutoff).")
    strong_activation: str = opt("leaky_relu", "Head activation of the strong view (tanh or leaky_relu).")
    order: str = opt(
        "weak_closer",
        "Triplet term order: 'weak_closer' max(0, m + sim(s, s**) - sim(s, s*)), which keeps the weak view "
        "closer (the paper's stated intent), or 'as_printed' max(0, m + sim(s, s*) - sim(s, s**)), the order "
        "the paper's formula is printed in.",
    )

    uses: ClassVar[tuple[str, ...]] = ("data.cutoff_token",)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("objective.strong_activation", self.strong_activation, ("tanh", "leaky_relu"))
        check_choice("objective.triplet_form", self.triplet_form, TRIPLET_FORMS)
        check_choice("objective.order", self.order, TRIPLET_ORDERS)
        _non_negative("margin", self.margin)
        _non_negative("triplet_weight", self.triplet_weight)
        _in_unit("weak_cutoff", self.weak_cutoff)
        _in_unit("strong_cutoff", self.strong_cutoff)
        if self.strong_cutoff <= self.weak_cutoff:
            raise ConfigError(
                f"cutoff_triplet needs objective.strong_cutoff > weak_cutoff, got {self.strong_cutoff} <= "
                f"{self.weak_cutoff}"
            )

    def check(self, cfg: TrainConfig) -> None:
        if cfg.model.pooler not in (None, "cls"):  # None: the start model's own, cls for a plain backbone
            raise ConfigError(
                "cutoff_triplet needs model.pooler=cls: the strong view's MLP head uses LeakyReLU"
            )


@dataclass
class NextSentenceOptions(TemperatureOptions):
    uses: ClassVar[tuple[str, ...]] = ("data.next_sentence_window", *TWO_ENCODER_KEYS)


@dataclass
class QuickThoughtsOptions(ObjectiveConfig):
    context_size: int = opt(1, "Neighbours on each side that are targets.")
    quick_thoughts_reduction: str = opt(
        "pairs",
        "'pairs' (one cross-entropy per (sentence, neighbour), the paper), 'rows' (unit target mass spread "
        "over a row's neighbours, the authors' code) or 'kl' (KL(targets || softmax), the KL form of Quick-Thoughts).",
    )
    quick_thoughts_diagonal: str = opt(
        "mask", "The source sentence's own score: 'mask' (-inf) or 'zero' (0, in the softmax)."
    )

    uses: ClassVar[tuple[str, ...]] = TWO_ENCODER_KEYS

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.context_size", self.context_size)
        check_choice("objective.quick_thoughts_reduction", self.quick_thoughts_reduction, QT_REDUCTIONS)
        check_choice("objective.quick_thoughts_diagonal", self.quick_thoughts_diagonal, QT_DIAGONALS)


@dataclass
class CoSENTOptions(ObjectiveConfig):
    scale: float = opt(
        COSENT_SCALE,
        "CoSENT: lambda of log(1 + sum_{s_i > s_j} exp(lambda (cos_j - cos_i))); the paper's 20.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.scale", self.scale)


@dataclass
class ESimCSEOptions(TemperatureOptions):
    dup_rate: float = opt(
        0.32,
        "Maximum word-repetition rate: the positive view repeats dup_len ~ U{0..max(2, int(dup_rate * n))} "
        "of its n words in place (the paper's BERT-base value 0.32).",
    )
    momentum: float = opt(0.995, "Momentum m of the momentum encoder: theta_m <- m theta_m + (1 - m) theta.")
    queue_factor: float = opt(
        2.5,
        "Queue of momentum-encoded negatives of queue_factor x training.batch_size sentences (the paper: "
        "2.5; 0 disables the queue).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        _in_unit("dup_rate", self.dup_rate, closed=True)
        _in_unit("momentum", self.momentum)
        _non_negative("queue_factor", self.queue_factor)


@dataclass
class MixCSEOptions(TemperatureOptions):
    mix_lambda: float = opt(
        0.2, "lambda of the mixed negative lambda h_i^+ + (1 - lambda) h_j (the paper's BERT-base 0.2)."
    )
    mix_partners: str = opt(
        "one",
        "'one': one mixed negative per anchor, with the next sentence of the (random) batch (the paper's "
        "formula); 'all' (ours): one with every other sentence of the batch.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("objective.mix_partners", self.mix_partners, MIX_PARTNERS)
        _in_unit("mix_lambda", self.mix_lambda, closed=True)

    def check(self, cfg: TrainConfig) -> None:
        if cfg.training.batch_size < 2:
            raise ConfigError("mixcse mixes a positive with another sentence of the batch: batch_size >= 2")


@dataclass
class ArcCSEOptions(TemperatureOptions):
    angular_margin: float = opt(
        10.0, "Additive angular margin m on the positive, in degrees (the paper: 10)."
    )
    triplet_margin: float = opt(
        0.0, "Margin of the triplet term on angles, in degrees (not verified against the paper: 0)."
    )
    triplet_weight: float = opt(1.0, "Weight of the triplet term (not verified against the paper: 1).")
    weak_mask: float = opt(
        0.1, "Fraction of tokens masked (one span) in the less-masked view x' (unverified)."
    )
    strong_mask: float = opt(
        0.2, "Fraction masked in the more-masked view x'' (its span contains x''s; unverified)."
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("angular_margin", "triplet_margin"):
            if not 0.0 <= getattr(self, name) < 90.0:
                raise ConfigError(f"objective.{name} must be in [0, 90) degrees, got {getattr(self, name)!r}")
        _non_negative("triplet_weight", self.triplet_weight)
        if not 0.0 < self.weak_mask < self.strong_mask < 1.0:
            raise ConfigError(
                f"arccse needs 0 < objective.weak_mask < strong_mask < 1, got {self.weak_mask}, {self.strong_mask}"
            )


def check_mask_pooler(cfg: TrainConfig) -> None:
    """PromptBERT's representation is the [MASK] state of a template: ``model.pooler=mask``."""
    if cfg.model.pooler != "mask":
        raise ConfigError(
            f"{cfg.objective.name} needs model.pooler=mask (the [MASK] state of a template), got "
            f"{cfg.model.pooler!r}"
        )


@dataclass
class PromptBERTOptions(TemperatureOptions):
    templated_views: ClassVar[bool] = True

    def check(self, cfg: TrainConfig) -> None:
        check_mask_pooler(cfg)


@dataclass
class SNCSEOptions(TemperatureOptions):
    bml_alpha: float = opt(
        0.1, "alpha of BML = ReLU(Δ + alpha) + ReLU(-Δ - beta), Δ = cos(h, h_neg) - cos(h, h+)."
    )
    bml_beta: float = opt(0.3, "beta of the bidirectional margin loss (Δ is kept within [-beta, -alpha]).")
    bml_weight: float = opt(1e-3, "Weight of the bidirectional margin loss added to InfoNCE.")

    uses: ClassVar[tuple[str, ...]] = ("data.negation_file",)
    templated_views: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.bml_alpha <= self.bml_beta:
            raise ConfigError(
                f"objective.bml_alpha and bml_beta need 0 <= alpha <= beta, got {self.bml_alpha}, {self.bml_beta}"
            )
        _non_negative("bml_weight", self.bml_weight)

    def check(self, cfg: TrainConfig) -> None:
        check_mask_pooler(cfg)


# ---- distillation from teachers (model.teacher); the width mapping is read by the methods that compare vectors
TEACHER_KEYS = ("model.teacher", "model.teacher_mapping")
#: distill_kl's temperatures (our reading, after RankCSE's ListNet: the teacher's is half the student's)
DISTILL_KL_TEMPERATURE = 0.05
DISTILL_KL_TEACHER_TEMPERATURE = 0.025


@dataclass
class TeacherOptions(ObjectiveConfig):
    """The options of a method that distils teachers (``model.teacher``); its own options follow."""

    uses: ClassVar[tuple[str, ...]] = ("model.teacher",)

    def check(self, cfg: TrainConfig) -> None:
        if cfg.model.teacher is None:
            raise ConfigError(
                f"{self.name} distils a teacher: set model.teacher (a model folder of any kind sentcl opens, a "
                "hub id or an offline short name such as all-MiniLM-L6-v2)"
            )


@dataclass
class DistillMSEOptions(TeacherOptions):
    simcse_weight: float = opt(
        0.0,
        "lambda of an added SimCSE term (ours, not the paper's): lambda x InfoNCE between two dropout views of "
        "each sentence (of a pair: the sentence and its translation); 0: the paper's loss alone.",
    )
    temperature: float = temperature_option()

    uses: ClassVar[tuple[str, ...]] = TEACHER_KEYS

    def __post_init__(self) -> None:
        super().__post_init__()
        _non_negative("simcse_weight", self.simcse_weight)
        check_positive("objective.temperature", self.temperature)


@dataclass
class DistillKLOptions(TeacherOptions):
    temperature: float = opt(
        DISTILL_KL_TEMPERATURE, "Student temperature: p_S = softmax over j != i of cos(s_i, s_j) / tau."
    )
    teacher_temperature: float = opt(
        DISTILL_KL_TEACHER_TEMPERATURE,
        "Teacher temperature: p_T = softmax over j != i of cos(t_i, t_j) / tau_T.",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("objective.temperature", self.temperature)
        check_positive("objective.teacher_temperature", self.teacher_temperature)


#: RankCSE's ranking losses: ListMLE (its best BERT-base number), ListNet, or both
RANKINGS = ("listmle", "listnet", "both")


@dataclass
class RankCSEOptions(TeacherOptions):
    temperature: float = opt(0.05, "tau_1 of SimCSE's InfoNCE on the two dropout views.")
    teacher_temperature: float = opt(
        0.05, "tau_2: the teachers' in-batch similarities are scaled by 1/tau_2 (their softmax for ListNet)."
    )
    listnet_temperature: float = opt(
        0.025, "tau_3: the student's similarities in ListNet are scaled by 1/tau_3 (tau_2 / 2, as the paper)."
    )
    listmle_temperature: float = opt(
        0.05, "The student's similarities in ListMLE are scaled by 1/this (the public reproduction's tau_2)."
    )
    ranking: str = opt(
        "listmle",
        "Ranking distillation: 'listmle' (Plackett-Luce likelihood of the teachers' order; the paper's best "
        "BERT-base row, 80.36), 'listnet' (cross-entropy of top-one probabilities; 80.05) or 'both'.",
    )
    listmle_weight: float = opt(1.0, "gamma: weight of the ListMLE term.")
    listnet_weight: float = opt(1.0, "gamma: weight of the ListNet term.")
    consistency_weight: float = opt(
        1.0,
        "beta: weight of the ranking consistency term, the Jensen-Shannon divergence between the in-batch "
        "distributions of the two dropout views (0: off).",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("temperature", "teacher_temperature", "listnet_temperature", "listmle_temperature"):
            check_positive(f"objective.{name}", getattr(self, name))
        check_choice("objective.ranking", self.ranking, RANKINGS)
        for name in ("listmle_weight", "listnet_weight", "consistency_weight"):
            _non_negative(name, getattr(self, name))


#: DiffCSE's BERT settings (Chuang et al. 2022, the authors' run_diffcse.sh): lambda and the masking ratio
DIFFCSE_LAMBDA = 0.005
DIFFCSE_MASKING_RATIO = 0.30
#: DiffCSE: which positions of x'' take the generator's token: every real token but the first, x'' = G(x') (the
#: paper and its code), or the masked ones only (ELECTRA's replacement)
DIFFCSE_EDITS = ("all", "masked")
#: DiffCSE: the generator's token at a position: its most likely one (the authors' code) or a draw from it
DIFFCSE_GENERATOR_OUTPUTS = ("argmax", "sample")
#: DiffCSE: positions the replaced-token loss averages over: the sentences' tokens (ours) or every padded
#: position of the batch, padding counted as "original" (the authors' code)
DIFFCSE_RTD_POSITIONS = ("tokens", "padded")


@dataclass
class DiffCSEOptions(InfoNCEOptions):
    """DiffCSE (Chuang et al. 2022): InfoNCE + lambda · L_RTD, the generator named by ``model.generator``."""

    lambda_weight: float = opt(
        DIFFCSE_LAMBDA,
        "Weight lambda of the conditional replaced-token-detection loss (the paper's BERT value 0.005).",
    )
    masking_ratio: float = opt(
        DIFFCSE_MASKING_RATIO,
        "Fraction of tokens masked (BERT's 80/10/10) before the generator fills them (the paper's BERT "
        "value 0.30).",
    )
    edit_positions: str = opt(
        "all",
        "Positions of x'' taken from the generator: 'all' (x'' = G(x'), every real token but the first; the "
        "paper and its code) or 'masked' (ELECTRA's replacement of the masked tokens only).",
    )
    generator_output: str = opt(
        "argmax",
        "The generator's token: 'argmax' (the authors' code) or 'sample' (a draw from its softmax, as the "
        "abstract words it and ELECTRA does).",
    )
    rtd_positions: str = opt(
        "tokens",
        "Positions L_RTD averages over: 'tokens' (every real token of each sentence, [CLS] and [SEP] included; "
        "our reading of the paper's sum over t) or 'padded' (every padded position, the authors' code).",
    )

    uses: ClassVar[tuple[str, ...]] = ("model.generator",)

    def __post_init__(self) -> None:
        super().__post_init__()
        _non_negative("lambda_weight", self.lambda_weight)
        if not 0.0 < self.masking_ratio <= 1.0:
            raise ConfigError(f"objective.masking_ratio must be in (0, 1], got {self.masking_ratio!r}")
        check_choice("objective.edit_positions", self.edit_positions, DIFFCSE_EDITS)
        check_choice("objective.generator_output", self.generator_output, DIFFCSE_GENERATOR_OUTPUTS)
        check_choice("objective.rtd_positions", self.rtd_positions, DIFFCSE_RTD_POSITIONS)

    def check(self, cfg: TrainConfig) -> None:
        if not cfg.model.generator:
            raise ConfigError(
                "diffcse needs model.generator: a masked-LM folder or hub id with the encoder's vocabulary "
                "(the paper: distilbert-base-uncased for bert-base-uncased)"
            )
        if self.mlm_weight > 0:
            raise ConfigError(
                "diffcse's replaced-token loss takes the place of the auxiliary MLM term: set "
                "objective.mlm_weight=0"
            )
        if self.rtd_positions == "padded" and cfg.training.gradient_cache_chunk > 0:
            raise ConfigError(
                "objective.rtd_positions=padded averages over the batch's padded length, which GradCache's "
                "chunks trim: use rtd_positions=tokens with training.gradient_cache_chunk"
            )
