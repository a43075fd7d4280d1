"""CutoffTripletOptions and the record of ``cutoff_triplet``, torch-free: what a recipe may set, checked once here,
and the paper (an unpublished research note: Token cutoff views with a triplet term) with its link.

The builder (``build.py``) receives an instance of CutoffTripletOptions and trusts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from sentcl.config.method_record import STS7, MethodRecord, Paper, register_method
from sentcl.config.objective import (
    TemperatureOptions,
    temperature_option,
)
from sentcl.config.typed import (
    ConfigError,
    check_choice,
    check_in_unit,
    check_non_negative,
    opt,
)

if TYPE_CHECKING:
    from sentcl.config.sections import TrainConfig


#: "paper": (s, s', s*, s**) with NT-Xent on (s, s'); "weak_positive" (ours): (s, s*, s**), InfoNCE on (s, s*)
TRIPLET_FORMS = ("paper", "weak_positive")


#: "weak_closer" (default): max(0, m + sim(s, s**) - sim(s, s*)), the weak view kept closer (the paper's stated
#: intent); "as_printed": max(0, m + sim(s, s*) - sim(s, s**)), the order the paper's formula is printed in
TRIPLET_ORDERS = ("weak_closer", "as_printed")


#: the token-cutoff triplet note's reported BERT-base temperature (configs/cutoff_triplet_bert_base.yaml; RoBERTa-base: 0.05)
CUTOFF_TRIPLET_TEMPERATURE = 0.07


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
        check_non_negative("objective.margin", self.margin)
        check_non_negative("objective.triplet_weight", self.triplet_weight)
        check_in_unit("objective.weak_cutoff", self.weak_cutoff)
        check_in_unit("objective.strong_cutoff", self.strong_cutoff)
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


#: the method's record: its name, options, reader, paper (with its link) and summary; registered in METHODS
RECORD = register_method(
    MethodRecord(
        "cutoff_triplet",
        CutoffTripletOptions,
        "lines",
        Paper(
            "an unpublished research note",
            "Token cutoff views with a triplet term",
            "unpublished",
            "Token cutoff views with a triplet term: an unpublished research note (no published paper to "
            "cite); its Tables 1-2 give the numbers.",
            76.91,
            f"{STS7}, [UNK] cutoff with the LeakyReLU strong-view head (the note's Tables 1-2)",
        ),
        "token cutoff views (weak s*, strong s**) with a triplet term (an unpublished research note)",
    )
)
