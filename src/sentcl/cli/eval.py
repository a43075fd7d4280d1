"""``sentcl eval``: evaluate a model on STS (and more) tasks."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sentcl.cli.eval_user_data import add_user_data_options, evaluate_user_data, read_user_data
from sentcl.cli.options import add_data_dir, add_model_options, encode_fn, load_model
from sentcl.paths import resolve_data_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    from sentcl.evaluation.runner import TASKS, task_names

    p = sub.add_parser("eval", help="Evaluate a model on STS (and more) tasks.")
    add_model_options(p)
    p.add_argument(
        "--tasks",
        nargs="+",
        default=None,
        choices=task_names(),
        metavar="TASK",
        help="Tasks: "
        + "; ".join(f"{k}: {h}" for k, (_, h) in TASKS.items())
        + "; full: sts + transfer; full_fast: sts + transfer_fast. Default: sts, or none with --pairs/--retrieval.",
    )
    add_user_data_options(p)
    p.add_argument(
        "--transfer-protocol",
        choices=("senteval", "sklearn"),
        default="senteval",
        help="Classifier of the transfer tasks: senteval (SentEval's PyTorch logistic regression, the protocol "
        "SimCSE reports; default) or sklearn (scikit-learn's logistic regression with a C grid).",
    )
    p.add_argument(
        "--mteb-tasks",
        nargs="+",
        default=[],
        metavar="NAME",
        help="Also run these MTEB tasks by name (e.g. STSBenchmark, Banking77Classification); their data "
        "comes from the hub, so this needs a network the first time.",
    )
    add_data_dir(p)
    p.add_argument("--output", type=Path, help="Write the results as JSON here.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sentcl.evaluation.runner import evaluate, format_results

    # the user's pairs files and BEIR folders, read (and checked) before the model loads
    user_data = read_user_data(args)
    if args.tasks is None:
        args.tasks = [] if user_data else ["sts"]
    data_dir = resolve_data_dir(args.data_dir) if args.tasks else None
    model = load_model(args)
    results = {}
    if data_dir is not None:
        results = evaluate(
            encode_fn(model, args), data_dir, args.tasks, transfer_protocol=args.transfer_protocol
        )
    results |= evaluate_user_data(model, encode_fn(model, args), user_data)
    if args.mteb_tasks:
        from sentcl.interop.mteb_adapter import run_mteb_tasks

        results["mteb_hub"] = run_mteb_tasks(encode_fn(model, args), args.mteb_tasks, args.batch_size)
    print(format_results({args.model: results}))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0
