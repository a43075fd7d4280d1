"""``sentcl eval``: evaluate a model on STS (and more) tasks."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentcl.cli.option_rules import declare as declare_rules
from sentcl.cli.option_rules import needs
from sentcl.cli.options import add_data_dir, add_model_options, add_overwrite, load_model
from sentcl.cli.unlabelled import add_unlabelled_options, read_unlabelled_option, run_unlabelled
from sentcl.config.names import EVAL_GROUPS, EVAL_TASKS, TRANSFER_TASKS, eval_tasks_help
from sentcl.evaluation.user_data import add_user_data_options
from sentcl.files.atomic import atomic_write_json
from sentcl.files.kinds import names_value, write_path
from sentcl.files.output import Input, claim_file, model_input
from sentcl.files.paths import resolve_data_dir
from sentcl.files.slots import declare
from sentcl.types import EncodeFn


def parse_dims(text: str) -> list[int]:
    """``384,256,128`` -> [384, 256, 128]: positive, distinct whole numbers."""
    try:
        dims = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--truncate-dims expects comma-separated whole numbers, got {text!r}") from None
    if not dims or any(d <= 0 for d in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"--truncate-dims expects distinct positive whole numbers, got {text!r}")
    return dims


@declare("dims")
def dims_option(text: str) -> list[int]:
    """argparse type for --truncate-dims: ``parse_dims``'s reason as argparse's message (not 'invalid value')."""
    try:
        return parse_dims(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--truncate-dims ")) from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="Evaluate a model on STS (and more) tasks.")
    add_model_options(p)
    p.add_argument(
        "--tasks",
        nargs="+",
        default=None,
        choices=[*EVAL_TASKS, *EVAL_GROUPS],
        metavar="TASK",
        help=f"Tasks: {eval_tasks_help()}. Default: sts, or none with --pairs/--retrieval/--unlabelled.",
    )
    add_user_data_options(p)
    add_unlabelled_options(p)
    p.add_argument(
        "--transfer-protocol",
        choices=("senteval", "sklearn"),
        default="senteval",
        help="Classifier of the transfer tasks: senteval (SentEval's PyTorch logistic regression, the protocol "
        "SimCSE reports; default) or sklearn (scikit-learn's logistic regression with a C grid).",
    )
    p.add_argument(
        "--transfer-tasks",
        nargs="+",
        default=None,
        choices=TRANSFER_TASKS,
        metavar="TASK",
        help=f"Run only these transfer tasks (of {', '.join(TRANSFER_TASKS)}; default all seven).",
    )
    p.add_argument(
        "--mteb-tasks",
        type=names_value,
        nargs="+",
        default=[],
        metavar="NAME",
        help="Also run these MTEB tasks by name (e.g. STSBenchmark, Banking77Classification); their data "
        "comes from the hub, so this needs a network the first time.",
    )
    add_data_dir(p)
    p.add_argument("--output", type=write_path, help="Write the results as JSON here.")
    p.add_argument(
        "--truncate-dims",
        type=dims_option,
        metavar="K,K,...",
        help="Evaluate at each of these truncation dimensions (a Matryoshka sweep, e.g. 384,256,128,64,32): "
        'results per dimension (JSON {"truncate_dims": {K: results}}).',
    )
    p.add_argument(
        "--plot",
        type=write_path,
        help="With --truncate-dims: a PNG of each task's score against the dimension.",
    )
    add_overwrite(p, "file at --output or --plot")
    p.set_defaults(func=handle, evaluates=True)
    declare_rules(
        p,
        needs(
            "--plot", "--truncate-dims", why="it draws a --truncate-dims sweep: add --truncate-dims K,K,..."
        ),
    )


def handle(args: argparse.Namespace) -> int:
    from sentcl.evaluation.embedding import before_normalisation, evaluation_encode_fn
    from sentcl.evaluation.runner import evaluate, expand, format_results
    from sentcl.evaluation.user_data import evaluate_user_data, read_user_data
    from sentcl.report.dimensions import plot_sweep, truncation_sweep

    # the user's pairs files and BEIR folders, read (and checked) before the model loads
    user_data = read_user_data(args)
    unlabelled = read_unlabelled_option(args)
    if args.tasks is None:
        args.tasks = [] if user_data or unlabelled else ["sts"]
    data_dir = resolve_data_dir(args.data_dir, ["senteval"]) if args.tasks else None
    if args.transfer_tasks and not {"transfer", "transfer_fast"} & set(expand(args.tasks)):
        raise ValueError(
            "--transfer-tasks chooses among the transfer tasks: add transfer or transfer_fast to --tasks"
        )
    inputs = [*model_input(args.model), *(Input(p, "--pairs") for p in args.pairs)]
    inputs += [Input(p, "--retrieval") for p in args.retrieval]
    inputs += [
        Input(p, flag) for p, flag in ((args.unlabelled, "--unlabelled"), (args.index, "--index")) if p
    ]
    for path, flag in ((args.output, "--output"), (args.plot, "--plot")):
        if path is not None:  # a refused output fails now, not after the evaluation
            claim_file(path, flag, inputs, overwrite=args.overwrite)
    model = load_model(args)

    def evaluate_all(encode: EncodeFn) -> dict:
        results = {}
        if data_dir is not None:
            results = evaluate(
                encode, data_dir, args.tasks, args.transfer_protocol, transfer_tasks=args.transfer_tasks
            )
        # the user's files: encoded as they come (a large corpus is not kept in the evaluation's table)
        results |= evaluate_user_data(model, getattr(encode, "embed", encode), user_data)
        if args.mteb_tasks:
            from sentcl.interop.mteb_adapter import run_mteb_tasks

            results["mteb_hub"] = run_mteb_tasks(encode, args.mteb_tasks, args.batch_size)
        return results

    # the one evaluation path (sentcl.evaluation.embedding): the embedding before the output normalisation,
    # each distinct sentence encoded once
    encode = evaluation_encode_fn(model, args.batch_size, args.max_length)
    with before_normalisation(model):
        if args.truncate_dims:
            sweep = truncation_sweep(model, args.truncate_dims, evaluate_all, encode)
            print(format_results({f"{args.model} @ {k}": r for k, r in sweep.items()}))
            results = {"truncate_dims": {str(k): r for k, r in sweep.items()}}
            if args.plot is not None:
                print(f"wrote {plot_sweep(sweep, args.plot, label=Path(args.model).name)}")
        else:
            results = evaluate_all(encode) if args.tasks or user_data or args.mteb_tasks else {}
            if results:
                print(format_results({args.model: results}))
    if unlabelled is not None:
        results[f"unlabelled:{args.unlabelled}"] = run_unlabelled(args, model, unlabelled)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(args.output, results)  # whole or not at all; strict JSON (undefined: null)
    return 0
