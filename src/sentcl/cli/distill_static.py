"""``sentcl distill-static TEACHER OUT``: a static student of any teacher (the recipe ``distill_static``).

Every default is the recipe's (``sentcl.methods.static_student.StaticRecipe``, ``FitSettings``): Model2Vec's
distillation (token vectors, PCA, SIF weights) then a fit to the teacher's vectors of the offline English
corpus. ``--no-fit`` stops after the distillation.
"""

from __future__ import annotations

import argparse

from sentcl.cli.options import add_data_dir, positive_int


def _fit_options(p: argparse.ArgumentParser) -> None:
    from sentcl.methods.static_fit import LOSSES, FitSettings

    d = FitSettings()
    p.add_argument("--no-fit", action="store_true", help="Distil only (Model2Vec's step, no training).")
    p.add_argument("--steps", type=positive_int, default=d.steps, help=f"Fit steps (default {d.steps}).")
    p.add_argument("--batch-size", type=positive_int, default=d.batch_size, help="Sentences a step.")
    p.add_argument("--learning-rate", type=float, default=d.learning_rate, help="Adam's learning rate.")
    p.add_argument("--warmup-steps", type=int, default=d.warmup_steps, help="Linear warm-up steps.")
    p.add_argument("--loss", choices=LOSSES, default=d.loss, help=f"Fit loss (default {d.loss}).")
    p.add_argument(
        "--contrastive-weight",
        type=float,
        default=d.contrastive_weight,
        help="Weight of an InfoNCE term against the batch's teacher vectors (0: none).",
    )
    p.add_argument("--temperature", type=float, default=d.temperature, help="InfoNCE's temperature.")
    p.add_argument("--seed", type=int, default=d.seed, help="Seed of the batch order.")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from sentcl.methods.static_distill import WEIGHTINGS
    from sentcl.methods.static_student import StaticRecipe

    r = StaticRecipe()
    p = sub.add_parser(
        "distill-static",
        help="Distil a teacher into a static model (one vector per token; the recipe distill_static).",
        description="Model2Vec's method (Tulkens & van Dongen): the teacher's vector of every token, PCA, SIF "
        "weights (Arora, Liang & Ma); then the table is fitted to the teacher's vectors of the offline "
        "English corpus. The folder is a sentence-transformers folder (StaticEmbedding).",
    )
    p.add_argument("teacher", help="The teacher: any model folder, hub id or offline short name.")
    p.add_argument("output", help="The new folder (new or empty).")
    p.add_argument("--dim", type=positive_int, default=r.dim, help=f"Width after PCA (default {r.dim}).")
    p.add_argument("--weighting", choices=WEIGHTINGS, default=r.weighting, help="p(w) of the SIF weights.")
    p.add_argument("--sif-a", type=float, default=r.sif_a, help="SIF's a (default %(default)s).")
    p.add_argument(
        "--max-sentences",
        type=positive_int,
        default=r.max_sentences,
        help="Corpus sentences to fit on (default %(default)s).",
    )
    p.add_argument("--teacher-cache", help="Folder of cached teacher vectors (default: the teacher cache).")
    _fit_options(p)
    add_data_dir(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sentcl.cli.options import settings_from_args
    from sentcl.methods.static_fit import FitSettings
    from sentcl.methods.static_student import StaticRecipe, build_static_student, read_summary

    fit = None if args.no_fit else settings_from_args(FitSettings, args)
    recipe = StaticRecipe(
        dim=args.dim, weighting=args.weighting, sif_a=args.sif_a, max_sentences=args.max_sentences, fit=fit
    )
    folder = build_static_student(args.teacher, args.output, recipe, args.data_dir, args.teacher_cache)
    summary = read_summary(folder)
    times = ", ".join(f"{k} {v:.1f}" for k, v in summary["times"].items())
    print(f"wrote {folder}: {summary['corpus_sentences']} corpus sentences; {times}")
    return 0
