"""What ``sentcl shrink`` builds for a target: the candidates, their estimated speed, the estimated CPU time.

The target is a speed (``--budget 10x``: at least 10 times the teacher's PyTorch encode on this machine, at
the user's thread count) or a quality (``--keep 97%``: at least 97% of the teacher's score on the user's
evaluation data). The candidate families are what sentcl builds:

- ``layers``: a student of k of the teacher's L layers (k = L/2 and L/3, at least 1), its layers chosen by
  measurement, distilled with ``distill_mse`` (Reimers & Gurevych 2020) on the offline English corpus; and the
  narrow student, one layer keeping ``1/NARROW_FFN_SHARE`` of its feed-forward neurons (``model.student_ffn``);
- ``int8``: onnxruntime's dynamic int8 export of the teacher and of each layer student;
- ``static``: a static student (Model2Vec's distillation then sentcl's fit, ``sentcl distill-static``) at two
  widths, and the weighted form (the recipe ``distill_static_weighted``) at the wider one.

The speed of a candidate is only estimated before it exists (``ESTIMATES``: k-layer students at L/k, the
narrow student at L times the ratio of a layer's weights to its own (``layer_weights``), int8 at
``INT8_GAIN`` times its source, static at ``STATIC_SPEED``, the weighted form at ``WEIGHTED_SPEED``; all against
the teacher); every estimate is replaced by a measurement once the candidate is built. For a speed budget the
plan keeps the candidates whose estimate reaches ``PLAN_MARGIN`` of the budget (the estimates are rough), and the
layer students that an int8 candidate needs; for a quality target every candidate; with the layer students an
int8 export needs (built, scored and timed even when ``--families`` leaves their family out).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

#: rough speeds against the teacher's PyTorch encode, replaced by measurements once built: int8 of a model
#: (graph only at one thread: 1.5x to 1.9x on an AVX2-only EPYC, bench/results/onnx_int8_avx2_speed.json; 2.7x
#: on a VNNI Xeon, bench/results/onnx_int8_variants.json), a static model (a static student's encode is over
#: 100x: docs/results/frontier-cpu.md)
INT8_GAIN = 2.0
STATIC_SPEED = 100.0
#: the weighted static form: 113x against 243x for the one-table form on the 2-core EPYC
#: (bench/results/static_speed_weighted.json); half the one-table estimate
WEIGHTED_SPEED = 50.0
ESTIMATES = {"int8_gain": INT8_GAIN, "static_speed": STATIC_SPEED, "weighted_speed": WEIGHTED_SPEED}
PLAN_MARGIN = 0.5
#: the narrow student keeps a quarter of its layer's feed-forward neurons (all-MiniLM-L6-v2: 384 of 1,536;
#: measured by the 10x run, bench/results/shrink/minilm-10x-pareto.md)
NARROW_FFN_SHARE = 4
STATIC_WIDTHS = (256, 128)
#: rough CPU costs of the steps that do not scale with the teacher's measured speed
EXPORT_SECONDS_PER_MILLION_WEIGHTS = 0.6
STATIC_FIT_SECONDS_PER_STEP = 0.02
#: its attention over padded batches: 617.6 CPU s for 3,000 steps (docs/results/static-students-cpu/)
WEIGHTED_FIT_SECONDS_PER_STEP = 0.2


@dataclass(frozen=True)
class Target:
    """``speed``: at least ``value`` times the teacher's speed; ``quality``: at least ``value`` (a fraction)
    of the teacher's score."""

    kind: str
    value: float

    def describe(self) -> str:
        return f"--budget {self.value:g}x" if self.kind == "speed" else f"--keep {self.value:.1%}"


def parse_budget(text: str) -> Target:
    """``10x`` (or ``10``) -> a speed target of 10; one clear error for anything else."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*[xX×]?\s*", text)
    if match is None or float(match.group(1)) <= 1:
        raise ValueError(f"--budget: expected a speed above the teacher's such as 10x, got {text!r}")
    return Target("speed", float(match.group(1)))


def parse_keep(text: str) -> Target:
    """``97%`` (or ``97``) -> a quality target of 0.97; one clear error for anything else."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*%?\s*", text)
    if match is None or not 0 < float(match.group(1)) <= 100:
        raise ValueError(f"--keep: expected a share of the teacher's score such as 97%, got {text!r}")
    return Target("quality", float(match.group(1)) / 100)


@dataclass(frozen=True)
class Candidate:
    """One model to build: ``family`` layers / int8 / static; ``layers`` the kept layer count (a layer student
    or its export); ``source`` the candidate an int8 export converts (``teacher`` or a layer student);
    ``ffn`` a narrow layer student's feed-forward neurons a layer; ``dim`` a static student's width and
    ``head`` its form (the static recipe's ``head``); ``estimate`` its speed against the teacher before it is
    measured."""

    name: str
    family: str
    estimate: float
    layers: int | None = None
    source: str | None = None
    dim: int | None = None
    head: str = "mean"
    ffn: int | None = None


@dataclass(frozen=True)
class TeacherShape:
    """What the plan needs of the teacher: its layer count, width, weights, vocabulary, measured speed and
    feed-forward neurons a layer."""

    layers: int
    hidden: int
    weights: int
    vocab: int
    sentences_per_s: float
    ffn: int


def layer_counts(layers: int) -> list[int]:
    """The depths of the layer students: L/2 and L/3 (rounded up), at least 1, below L, distinct."""
    return sorted({max(1, math.ceil(layers / d)) for d in (2, 3)} - {layers}, reverse=True)


def layer_weights(hidden: int, ffn: int) -> int:
    """A transformer layer's weight count, which its speed follows: attention's four H x H maps and the
    feed-forward's two H x F."""
    return 4 * hidden * hidden + 2 * hidden * ffn


def narrow_ffn(shape: TeacherShape) -> int:
    """The narrow student's feed-forward neurons a layer."""
    return max(1, shape.ffn // NARROW_FFN_SHARE)


def static_widths(hidden: int) -> list[int]:
    """Two widths below the teacher's (PCA keeps fewer directions than it has): 256 and 128, at most two
    thirds and one third of the teacher's width."""
    return sorted(
        {max(1, min(w, hidden * (3 - i) // 3)) for i, w in enumerate(STATIC_WIDTHS, 1)}, reverse=True
    )


def every_candidate(shape: TeacherShape) -> list[Candidate]:
    """Every candidate sentcl can build from this teacher, with its estimated speed."""
    out = [Candidate("teacher-int8", "int8", INT8_GAIN, source="teacher")]
    for k in layer_counts(shape.layers):
        speed = shape.layers / k
        out.append(Candidate(f"l{k}", "layers", speed, layers=k))
        out.append(Candidate(f"l{k}-int8", "int8", speed * INT8_GAIN, layers=k, source=f"l{k}"))
    if shape.layers > 1:  # the narrow student: one of the teacher's layers, a quarter of its neurons
        ffn = narrow_ffn(shape)
        name = f"l1-ffn{ffn}"
        speed = shape.layers * layer_weights(shape.hidden, shape.ffn) / layer_weights(shape.hidden, ffn)
        out.append(Candidate(name, "layers", speed, layers=1, ffn=ffn))
        out.append(Candidate(f"{name}-int8", "int8", speed * INT8_GAIN, layers=1, source=name))
    widths = static_widths(shape.hidden)
    out += [Candidate(f"static-{w}", "static", STATIC_SPEED, dim=w) for w in widths]
    out.append(
        Candidate(f"static-weighted-{widths[0]}", "static", WEIGHTED_SPEED, dim=widths[0], head="weights")
    )
    return out


def plan_candidates(shape: TeacherShape, target: Target, families: tuple[str, ...]) -> list[Candidate]:
    """The candidates worth building for ``target`` among ``families`` (module docstring), in build order."""
    every = every_candidate(shape)
    pool = [c for c in every if c.family in families]
    if not pool:
        raise ValueError(f"--families {','.join(families)}: no candidate of these families for this teacher")
    chosen = pool
    if target.kind == "speed":
        chosen = [c for c in pool if c.estimate >= target.value * PLAN_MARGIN]
    if not chosen:  # nothing is expected to reach it: the fastest family, so that the nearest point is shown
        fastest = max(c.estimate for c in pool)
        chosen = [c for c in pool if c.estimate == fastest]
    needed = {c.source for c in chosen if c.source not in (None, "teacher")}  # an export's layer student
    return [c for c in every if c in chosen or c.name in needed]


@dataclass(frozen=True)
class Budget:
    """How much a run builds: corpus sentences, steps and batch of each distillation, texts scored."""

    corpus_sentences: int
    layer_steps: int
    static_steps: int
    batch_size: int
    choice_texts: int
    eval_texts: int
    time_texts: int
    rounds: int
    min_seconds: float


def layer_subset_count(layers: int, keep: int) -> int:
    """How many layer subsets the layer choice scores (``sentcl.shrink.layer_choice.layer_subsets``)."""
    from sentcl.shrink.layer_choice import layer_subsets

    return len(layer_subsets(layers, keep))


def estimate_seconds(shape: TeacherShape, plan: list[Candidate], budget: Budget) -> dict[str, float]:
    """Estimated CPU seconds of each step of the plan (from the teacher's measured speed; rough)."""
    rate = shape.sentences_per_s
    est: dict[str, float] = {}
    if any(c.family in ("layers", "static") or c.layers for c in plan):
        est["teacher vectors of the corpus (teacher cache)"] = budget.corpus_sentences / rate
    for c in plan:
        speed = rate * c.estimate
        if c.family == "layers":
            subsets = layer_subset_count(shape.layers, c.layers or 1)
            est[f"{c.name}: layer choice ({subsets} subsets)"] = subsets * budget.choice_texts / speed
            # a step: the student's forward and backward (about 3 forwards) over a batch
            est[f"{c.name}: distillation ({budget.layer_steps} steps)"] = (
                3 * budget.layer_steps * (budget.batch_size / speed)
            )
        elif c.family == "int8":
            weights = shape.weights * (c.layers or shape.layers) / shape.layers
            est[f"{c.name}: export"] = 3 + EXPORT_SECONDS_PER_MILLION_WEIGHTS * weights / 1e6
        else:
            est[f"{c.name}: distillation and fit"] = (
                4 * shape.vocab / rate / 8  # every vocabulary token through the teacher (short inputs)
                + (WEIGHTED_FIT_SECONDS_PER_STEP if c.head == "weights" else STATIC_FIT_SECONDS_PER_STEP)
                * budget.static_steps
            )
        est[f"{c.name}: evaluation"] = budget.eval_texts / speed
    est["teacher: evaluation"] = budget.eval_texts / rate
    per_round = sum(max(budget.min_seconds, budget.time_texts / (rate * c.estimate)) for c in plan)
    per_round += max(budget.min_seconds, budget.time_texts / rate)
    est["timing every model in alternating rounds"] = budget.rounds * per_round
    return est


def plan_record(plan: list[Candidate]) -> list[dict[str, Any]]:
    return [asdict(c) for c in plan]


__all__ = [
    "Budget",
    "Candidate",
    "Target",
    "TeacherShape",
    "estimate_seconds",
    "every_candidate",
    "layer_counts",
    "layer_weights",
    "narrow_ffn",
    "parse_budget",
    "parse_keep",
    "plan_candidates",
    "static_widths",
]
