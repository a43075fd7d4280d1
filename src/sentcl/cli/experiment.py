"""``sentcl experiment``: run a grid of training runs and write the paper-style table."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from sentcl.cli.options import add_overrides
from sentcl.config.builtin import resolve_recipe
from sentcl.files.kinds import name_value, own_folder, read_folder, read_folder_name, recipe

CHECKOUT_RESULTS = Path("docs/results")  # the results pages of the project's documentation site
PLAIN_RESULTS = Path("results")  # anywhere else: a folder of the working folder's own, never ./docs


def default_output(cwd: Path) -> Path:
    """docs/results when ``cwd`` is a sentcl checkout (its src/sentcl and docs/results exist), else results/."""
    if (cwd / "src" / "sentcl").is_dir() and (cwd / CHECKOUT_RESULTS).is_dir():
        return CHECKOUT_RESULTS
    return PLAIN_RESULTS


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("experiment", help="Run a grid of training runs and write the paper-style table.")
    p.add_argument(
        "grid",
        type=recipe,
        help="Grid file (e.g. configs/experiments/dropout.yaml), or a built-in grid's name (dropout, "
        "experiments/dropout; sentcl recipes lists them; a path wins when both exist).",
    )
    p.add_argument(
        "--variant", type=name_value, default="cpu", help="Variant of the grid (cpu or full; default cpu)."
    )
    p.add_argument(
        "--output",
        type=own_folder,
        help=f"Folder for NAME-VARIANT.md/.png (default: {CHECKOUT_RESULTS} in a sentcl checkout, whose site "
        f"publishes them; elsewhere {PLAIN_RESULTS}).",
    )
    p.add_argument(
        "--runs-dir", type=read_folder, default=Path("runs/experiments"), help="Run folders go below this."
    )
    add_overrides(p, "Override a config key for every point (repeatable).")
    p.add_argument(
        "--metric",
        choices=("stsb_dev", "stsb", "sts_avg"),
        help="Metric of the table instead of the grid's own (sts_avg needs eval.final_tasks to include sts).",
    )
    p.add_argument("--data-dir", type=read_folder_name, help="Data folder (sets data.data_dir).")
    p.add_argument(
        "--dry-run", action="store_true", help="Check the grid and list its points; train nothing."
    )
    p.add_argument(
        "--only",
        type=name_value,
        action="append",
        metavar="POINT",
        help="Run only this point (repeatable; by name, as the grid file spells it), with the training points "
        "its post-processing needs.",
    )
    p.add_argument(
        "--from-summaries",
        action="store_true",
        help="Train nothing: rebuild the page from the run summaries committed beside it "
        "(OUTPUT/GRID-VARIANT/runs/, written by every run of this command).",
    )
    p.set_defaults(func=handle, evaluates=True)


def handle(args: argparse.Namespace) -> int:
    from sentcl.experiments.grid import load_grid, point_configs, select_points
    from sentcl.experiments.page import write_grid_report
    from sentcl.experiments.runs import run_grid
    from sentcl.experiments.summaries import rows_from_summaries, summaries_dir, write_summaries
    from sentcl.files.output import Input, prepare_folder

    overrides = list(args.overrides) + ([f"data.data_dir={args.data_dir}"] if args.data_dir else [])
    spec = load_grid(resolve_recipe(args.grid, grids=True))
    if args.metric:
        spec = dataclasses.replace(spec, metric=args.metric)
    whole = spec
    if args.only:
        spec = select_points(spec, args.only)
    if args.dry_run:
        for point, cfg in point_configs(spec, args.variant, args.runs_dir, overrides):
            post = point.postprocess
            what = f"  postprocess: {post.method} of {post.model}" if post is not None else ""
            print(f"{point.name}: {cfg.training.output_dir}  {' '.join(point.overrides)}{what}")
        return 0
    if args.output is None:
        args.output = default_output(Path.cwd())
    # the pages' folder: new, empty or earlier pages (never a file, a model or a run), before any point trains;
    # this grid's own page or page folder (its summaries, side tables) shows its pages folder (sentcl.files.output)
    page = f"{spec.name}-{args.variant}"  # this grid's page, and its folder (summaries, side tables)
    prepare_folder(
        args.output, "experiment", "--output", [Input(Path(args.grid), "GRID")], [page, f"{page}.md"]
    )
    summaries = summaries_dir(args.output, spec, args.variant)
    if not args.from_summaries:
        ran = run_grid(spec, args.variant, args.runs_dir, overrides)
        write_summaries(ran, summaries)
    try:  # the page is built from the summaries alone, so that --from-summaries rebuilds it exactly
        rows = rows_from_summaries(whole, args.variant, summaries, overrides)
        spec = whole
    except FileNotFoundError:
        if args.from_summaries:
            raise
        rows = ran  # --only before the other points have summaries: the page shows the points run
    command = " ".join(["sentcl experiment", str(args.grid), "--variant", args.variant])
    command += f" --metric {args.metric}" if args.metric else ""
    command += "".join(f" --only {name!r}" for name in args.only or ()) if spec is not whole else ""
    md, png = write_grid_report(spec, args.variant, rows, args.output, command, summaries)
    print(f"wrote {md} and {png}")
    return 0
