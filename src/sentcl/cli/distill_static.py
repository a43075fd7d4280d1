"""``sentcl distill-static [TEACHER] [OUT]``: a static student of any teacher, by a static recipe.

The settings are the recipe's (``--config``, default the built-in ``distill_static``; ``sentcl.config.
static_recipe``): Model2Vec's distillation (token vectors, PCA, SIF weights), a fit to the teacher's
vectors of the offline English corpus, then the common components of the student's sentence vectors removed.
``TEACHER`` and ``OUT`` set the recipe's ``teacher`` and ``output_dir``; ``--set key=value`` (repeatable) any
other setting, e.g. ``--set fit.steps=0``. The few flags below are shorthands for the settings people change
most and hold no values of their own.
"""

from __future__ import annotations

import argparse

from sentcl.cli.options import add_data_dir, add_overwrite, positive_int
from sentcl.files.kinds import finite_float, model_name, own_folder_name, read_folder_name, recipe, setting

# flag -> the recipe key it sets (each flag's default is None: the recipe's value stands)
SHORTHANDS = {
    "dim": "dim",
    "head": "head",
    "weighting": "weighting",
    "sif_a": "sif_a",
    "max_sentences": "max_sentences",
    "teacher_cache": "teacher_cache",
    "steps": "fit.steps",
    "batch_size": "fit.batch_size",
    "learning_rate": "fit.learning_rate",
    "contrastive_weight": "fit.contrastive_weight",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    from sentcl.config.static_recipe import HEADS, WEIGHTINGS

    p = sub.add_parser(
        "distill-static",
        help="Distil a teacher into a static model (one vector per token; the recipe distill_static).",
        description="Model2Vec's method (Tulkens & van Dongen): the teacher's vector of every token, PCA, SIF "
        "weights (Arora, Liang & Ma); then the table is fitted to the teacher's vectors of the offline "
        "English corpus, and its sentence vectors' common components are removed. The folder is a "
        "sentence-transformers folder (StaticEmbedding). --head weights (the recipe distill_static_weighted) "
        "learns the mean's weights from a small attention over the rows, kept as tables beside the table. Every "
        "setting is the recipe's: sentcl recipes show distill_static.",
    )
    p.add_argument(
        "teacher",
        type=model_name,
        nargs="?",
        help="The teacher (the recipe's teacher): a folder, hub id or name.",
    )
    p.add_argument(
        "output",
        type=own_folder_name,
        nargs="?",
        help="The new folder (new or empty, or with --overwrite an earlier one; the recipe's output_dir).",
    )
    add_overwrite(p, "static model that sentcl wrote at OUTPUT")
    p.add_argument(
        "--config",
        type=recipe,
        default=None,
        help="A static recipe: a file or a built-in name (distill_static).",
    )
    p.add_argument("--set", type=setting, dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--dim", type=positive_int, help="The student's width (dim).")
    p.add_argument(
        "--head", choices=HEADS, help="The form: one table (mean) or the weighted mean (weights) (head)."
    )
    p.add_argument("--weighting", choices=WEIGHTINGS, help="p(w) of the SIF weights (weighting).")
    p.add_argument("--sif-a", type=finite_float, help="SIF's a (sif_a).")
    p.add_argument("--max-sentences", type=positive_int, help="Corpus sentences to fit on (max_sentences).")
    p.add_argument(
        "--teacher-cache", type=read_folder_name, help="Folder of cached teacher vectors (teacher_cache)."
    )
    p.add_argument("--no-fit", action="store_true", help="Distil only (fit.steps=0).")
    p.add_argument("--steps", type=positive_int, help="Fit steps (fit.steps).")
    p.add_argument("--batch-size", type=positive_int, help="Sentences a fit step (fit.batch_size).")
    p.add_argument("--learning-rate", type=finite_float, help="Adam's learning rate (fit.learning_rate).")
    p.add_argument(
        "--contrastive-weight", type=finite_float, help="InfoNCE's weight (fit.contrastive_weight)."
    )
    add_data_dir(p)
    p.set_defaults(func=handle)


def recipe_overrides(args: argparse.Namespace) -> list[str]:
    """The positional arguments and shorthand flags as ``key=value`` overrides, before ``--set``'s own."""
    given = {"teacher": args.teacher, "output_dir": args.output}
    given |= {key: getattr(args, flag) for flag, key in SHORTHANDS.items()}
    out = [f"{key}={value}" for key, value in given.items() if value is not None]
    return out + (["fit.steps=0"] if args.no_fit else []) + list(args.overrides)


def handle(args: argparse.Namespace) -> int:
    from sentcl.config.static_recipe import load_static_recipe
    from sentcl.methods.static_student import build_static_student, read_summary

    recipe = load_static_recipe(args.config, recipe_overrides(args))
    folder = build_static_student(recipe, args.data_dir, overwrite=args.overwrite)
    summary = read_summary(folder)
    times = ", ".join(f"{k} {v:.1f}" for k, v in summary["times"].items())
    print(f"wrote {folder}: {summary['corpus_sentences']} corpus sentences; {times}")
    return 0
