"""``sentcl shrink``: from a teacher to the smallest fast model that meets a speed or quality target.

1. The teacher is opened (any folder sentcl opens) and timed on this machine at the user's thread count.
2. The plan (``sentcl.shrink.plan``): the candidates that can meet the target and the estimated CPU time;
   ``dry_run`` prints it and stops.
3. Each candidate is built (``sentcl.shrink.build``), scored on the user's evaluation data
   (``sentcl.shrink.evaluation``) and timed with the teacher in alternating rounds
   (``sentcl.evaluation.speed``); every step is resumable (``sentcl.shrink.steps``).
4. The choice (``choose``), the Pareto table, the plot and the chosen model's folder with its card
   (``sentcl.shrink.outputs``).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sentcl.shrink.evaluation import EvalData, Scorer
from sentcl.shrink.plan import Budget, Candidate, Target, TeacherShape, estimate_seconds, plan_candidates
from sentcl.shrink.steps import Steps

logger = logging.getLogger(__name__)
FAMILIES = ("layers", "int8", "static")
KIND = "shrink"


@dataclass
class ShrinkOptions:
    teacher: str
    output: Path
    target: Target
    evaluation: EvalData
    data_dir: Path
    budget: Budget
    threads: int = 1
    families: tuple[str, ...] = FAMILIES
    cache: str | None = None
    seed: int = 42
    dry_run: bool = False


def teacher_shape(encoder: Any, rate: float) -> TeacherShape:
    from sentcl.modeling.student import ffn_linears, layer_list

    layers, _, _ = layer_list(encoder.backbone)
    weights = sum(p.numel() for p in encoder.parameters())
    config = encoder.backbone.config
    ffn = getattr(config, ffn_linears(encoder.backbone)[1][2])  # the feed-forward neurons a layer
    return TeacherShape(len(layers), config.hidden_size, weights, len(encoder.tokenizer), rate, ffn)


def timing_sentences(opts: ShrinkOptions) -> list[str]:
    """The texts every model is timed on: the evaluation data's, else the corpus' first ones."""
    found = opts.evaluation.sentences(opts.budget.time_texts)
    if len(found) >= min(64, opts.budget.time_texts):
        return found
    from sentcl.methods.static_student import corpus_sentences

    return corpus_sentences(opts.data_dir, opts.budget.time_texts)


def format_plan(
    shape: TeacherShape, plan: list[Candidate], est: dict[str, float], opts: ShrinkOptions
) -> str:
    lines = [
        f"teacher {opts.teacher}: {shape.layers} layers, {shape.hidden} wide, {shape.weights:,} weights; "
        f"{shape.sentences_per_s:,.0f} sentences/s on this machine at {opts.threads} thread(s)",
        f"target: {opts.target.describe()}; evaluation: {opts.evaluation.kind} {opts.evaluation.label}",
        "candidates (speed against the teacher, estimated until measured):",
    ]
    lines += [f"  {c.name:<14} {c.family:<7} ~{c.estimate:g}x" for c in plan]
    lines.append("estimated CPU time (rough):")
    lines += [f"  {name}: {seconds:,.0f} s" for name, seconds in est.items()]
    lines.append(f"  total: {sum(est.values()):,.0f} s (about {sum(est.values()) / 60:,.0f} min)")
    return "\n".join(lines)


def choose(rows: dict[str, dict[str, Any]], target: Target, threads: int) -> tuple[str, bool, str]:
    """(the chosen candidate, whether it meets the target, the sentence that says so). Among the candidates
    that meet the target, the best on the other axis; when none does, the nearest on the target's axis."""
    cands = [n for n in rows if n != "teacher"]
    speed = {n: rows[n]["speed_vs_teacher"] for n in cands}
    kept = {n: rows[n]["kept"] for n in cands}
    on_speed = target.kind == "speed"
    axis, other = (speed, kept) if on_speed else (kept, speed)
    meeting = [n for n in cands if axis[n] >= target.value]
    name = max(meeting or cands, key=lambda n: (other[n], axis[n]) if meeting else (axis[n], other[n]))
    at = f"{speed[name]:.1f}x the teacher's speed at {threads} thread(s)"
    if meeting and on_speed:
        said = f"{name} meets {target.value:g}x: {at}, keeping {kept[name]:.1%} of its score."
    elif meeting:
        said = f"{name} keeps {kept[name]:.1%} of the teacher's score (target {target.value:.1%}) at {at}."
    elif on_speed:
        said = (
            f"No candidate reached {target.value:g}x the teacher's speed on this machine at {threads} thread(s); "
            f"the nearest is {name} at {speed[name]:.1f}x, keeping {kept[name]:.1%} of its score."
        )
    else:
        said = (
            f"No candidate kept {target.value:.1%} of the teacher's score; the nearest is {name}, keeping "
            f"{kept[name]:.1%} at {at}."
        )
    return name, bool(meeting), said


def shrink(opts: ShrinkOptions, log: Any = print) -> dict[str, Any]:
    """The whole run (module docstring); returns the run's record (also ``OUTPUT/shrink.json``), or the plan
    alone with ``dry_run``."""
    import torch

    from sentcl.evaluation.speed import time_point, timed
    from sentcl.files.fingerprint import tree_fingerprint
    from sentcl.files.output import model_input, prepare_folder
    from sentcl.files.paths import resolve_model_path
    from sentcl.modeling.open import open_model

    torch.set_num_threads(opts.threads)
    if not opts.dry_run:  # the output is checked before any work
        from sentcl.files.output import claim_folder

        claim_folder(opts.output, KIND, "OUTPUT", model_input(opts.teacher, "TEACHER"))
    teacher = open_model(
        opts.teacher, threads=opts.threads, needs_torch="shrinking (a student of some of its layers)"
    ).eval()
    folder = str(resolve_model_path(opts.teacher))
    sentences = timing_sentences(opts)
    encode = timed(lambda s: teacher.encode(s, normalize=True))
    rate = time_point(encode, sentences[:256], opts.budget.min_seconds)[0]
    shape = teacher_shape(teacher, rate)
    plan = plan_candidates(shape, opts.target, opts.families)
    est = estimate_seconds(shape, plan, opts.budget)
    log(format_plan(shape, plan, est, opts))
    record: dict[str, Any] = {
        "teacher": opts.teacher,
        "target": asdict(opts.target),
        "evaluation": {"kind": opts.evaluation.kind, "source": opts.evaluation.label},
        "threads": opts.threads,
        "budget": asdict(opts.budget),
        "teacher_shape": asdict(shape),
        "plan": [asdict(c) for c in plan],
        "estimated_cpu_seconds": est,
    }
    if opts.dry_run:
        return record
    from sentcl.shrink.build import Context, build_candidate
    from sentcl.shrink.outputs import evaluate_all, time_all, write_outputs

    prepare_folder(opts.output, KIND, "OUTPUT", model_input(opts.teacher, "TEACHER"))
    steps = Steps(opts.output, log)
    ctx = Context(
        folder,
        tree_fingerprint(folder),
        opts.output,
        opts.data_dir,
        opts.cache,
        opts.budget,
        opts.seed,
        steps,
    )
    for cand in plan:
        build_candidate(ctx, cand, shape.layers)
    scorer = Scorer(opts.evaluation, opts.data_dir, teacher_rows(opts, folder))
    scores = evaluate_all(ctx, teacher, scorer, opts.evaluation.digest)
    speeds = time_all(ctx, teacher, sentences, opts.threads)
    return write_outputs(ctx, opts, record, scores, speeds, choose)


def teacher_rows(opts: ShrinkOptions, folder: str) -> Any:
    """The teacher's vectors of a label-free texts file (from the teacher cache), else None."""
    if opts.evaluation.kind != "texts":
        return None
    from sentcl.methods.static_student import teacher_matrix

    return teacher_matrix(folder, opts.evaluation.data, opts.cache)


__all__ = ["FAMILIES", "ShrinkOptions", "choose", "shrink"]
