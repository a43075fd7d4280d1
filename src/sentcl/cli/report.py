"""``sentcl report``: a Markdown report with tables and PNG plots for runs or models."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentcl.cli.options import add_batch_size, add_data_dir, add_pooler
from sentcl.config.names import EVAL_GROUPS, EVAL_TASKS
from sentcl.files.kinds import own_folder, read_folder_name
from sentcl.files.pathcheck import check_output_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="Markdown report with tables and PNG plots for runs or models.")
    p.add_argument(
        "runs",
        type=read_folder_name,
        nargs="+",
        metavar="RUN_DIR",
        help="Run folders, model folders or offline short names.",
    )
    p.add_argument(
        "--output", type=own_folder, default=Path("report"), help="Output folder (default ./report)."
    )
    p.add_argument(
        "--eval-tasks",
        nargs="+",
        choices=[*EVAL_TASKS, *EVAL_GROUPS],
        metavar="TASK",
        help="Tasks to show; ones results.json lacks are computed and cached "
        "(default: sts transfer_fast align_uniform anisotropy).",
    )
    add_data_dir(p)
    add_batch_size(p)
    add_pooler(
        p,
        "Pooler for model sources (runs keep their saved one); default: the model's saved one, else cls.",
    )
    p.set_defaults(func=handle, evaluates=True)


def handle(args: argparse.Namespace) -> int:
    from sentcl.report import DEFAULT_TASKS, make_report

    check_output_dir(args.output, "--output")  # before the runs are evaluated
    report = make_report(
        args.runs, args.output, args.eval_tasks or DEFAULT_TASKS, args.data_dir, args.batch_size, args.pooler
    )
    print(f"wrote {report.markdown} and {len(report.figures)} figure(s)")
    return 0
