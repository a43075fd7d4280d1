"""``sentcl eval``: evaluate a model on STS (and more) tasks."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sentcl.cli.options import add_data_dir, add_model_options, encode_fn, load_model
from sentcl.paths import resolve_data_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    from sentcl.evaluation.runner import TASKS, task_names

    p = sub.add_parser("eval", help="Evaluate a model on STS (and more) tasks.")
    add_model_options(p)
    p.add_argument(
        "--tasks",
        nargs="+",
        default=["sts"],
        choices=task_names(),
        metavar="TASK",
        help="Tasks: "
        + "; ".join(f"{k}: {h}" for k, (_, h) in TASKS.items())
        + "; full: sts + transfer; full_fast: sts + transfer_fast.",
    )
    add_data_dir(p)
    p.add_argument("--output", type=Path, help="Write the results as JSON here.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sentcl.evaluation.runner import evaluate, format_results

    data_dir = resolve_data_dir(args.data_dir)
    model = load_model(args)
    results = evaluate(encode_fn(model, args), data_dir, args.tasks)
    print(format_results({args.model: results}))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0
