"""``sentcl shrink TEACHER OUTPUT --budget 10x | --keep 97%``: a smaller, faster model of any teacher.

The whole path in one command (``sentcl.shrink``): time the teacher here, plan the candidates (layer students,
int8 exports, static students), build, score on the user's evaluation data, time, choose; the Pareto table,
its plot and the chosen model (``OUTPUT/model``, with its card) land in OUTPUT. Run it again after a kill:
finished steps are reused.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from sentcl.cli.options import add_data_dir, positive_int
from sentcl.files.kinds import (
    duration,
    model_name,
    name_value,
    names_value,
    own_folder,
    read_file,
    read_folder,
    read_folder_name,
    whole_number,
)
from sentcl.files.slots import declare
from sentcl.shrink.plan import Target, parse_budget, parse_keep

DEFAULTS = {
    "corpus_sentences": 40000,
    "layer_steps": 600,
    "static_steps": 600,
    "batch_size": 64,
    "choice_texts": 500,
    "time_texts": 1000,
    "rounds": 3,
    "min_seconds": 1.0,
}


@declare("text")
def budget_option(text: str) -> Target:
    """argparse type for --budget: a speed such as ``10x`` (``sentcl.shrink.plan.parse_budget``)."""
    return _target(parse_budget, text)


@declare("text")
def keep_option(text: str) -> Target:
    """argparse type for --keep: a share of the teacher's score such as ``97%``."""
    return _target(parse_keep, text)


def _target(parse: Callable[[str], Target], text: str) -> Target:
    try:
        return parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).split(": ", 1)[-1]) from None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "shrink",
        help="Make a teacher smaller and faster for a speed budget or a quality to keep, in one command.",
        description="Times the teacher on this machine, builds the candidates that can meet the target (layer "
        "students distilled from their best layers, int8 ONNX exports, static students at two widths), "
        "scores each on your evaluation data, times each at your thread count, and writes the Pareto table "
        "(pareto.md, pareto.json), its plot (pareto.png) and the chosen model (OUTPUT/model, with its card: "
        "ready for sentcl serve and sentcl index). Every step is resumable: run it again after a kill.",
    )
    p.add_argument(
        "teacher",
        type=model_name,
        help="The model to shrink: a folder of any kind sentcl opens, a hub id or name.",
    )
    p.add_argument(
        "output", type=own_folder, nargs="?", help="The run folder (new, empty, or an earlier shrink run)."
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--budget",
        type=budget_option,
        help="The speed to reach against the teacher's PyTorch encode, e.g. 10x.",
    )
    target.add_argument(
        "--keep", type=keep_option, help="The share of the teacher's score to keep, e.g. 97%%."
    )
    p.add_argument(
        "--dry-run", action="store_true", help="Print the plan and its estimated CPU time; build nothing."
    )
    p.add_argument("--pairs", type=read_file, help="Evaluate on an STS pairs file (TSV, CSV or JSONL).")
    p.add_argument("--retrieval", type=read_folder, help="Evaluate on a BEIR folder (nDCG@10).")
    p.add_argument(
        "--split", type=name_value, default="test", help="qrels split of --retrieval (default test)."
    )
    p.add_argument(
        "--texts",
        type=read_file,
        help="Evaluate without labels on your texts (one a line): neighbour agreement@10 with the teacher.",
    )
    p.add_argument(
        "--tasks",
        type=names_value,
        default="stsb_dev",
        help="sentcl's evaluation tasks when no file is given (default stsb_dev).",
    )
    p.add_argument(
        "--threads", type=positive_int, default=1, help="Threads to time and run with (default 1)."
    )
    p.add_argument(
        "--families",
        type=names_value,
        default="layers,int8,static",
        help="Candidate families (default layers,int8,static).",
    )
    p.add_argument(
        "--teacher-cache",
        type=read_folder_name,
        help="Folder of cached teacher vectors (default: sentcl's cache).",
    )
    p.add_argument("--corpus-sentences", type=positive_int, default=DEFAULTS["corpus_sentences"])
    p.add_argument("--layer-steps", type=positive_int, default=DEFAULTS["layer_steps"])
    p.add_argument("--static-steps", type=positive_int, default=DEFAULTS["static_steps"])
    p.add_argument("--batch-size", type=positive_int, default=DEFAULTS["batch_size"])
    p.add_argument("--choice-texts", type=positive_int, default=DEFAULTS["choice_texts"])
    p.add_argument("--time-texts", type=positive_int, default=DEFAULTS["time_texts"])
    p.add_argument("--rounds", type=positive_int, default=DEFAULTS["rounds"])
    p.add_argument("--min-seconds", type=duration, default=DEFAULTS["min_seconds"])
    p.add_argument("--seed", type=whole_number, default=42)
    add_data_dir(p)
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from sentcl.files.paths import resolve_data_dir
    from sentcl.shrink.evaluation import read_eval_data
    from sentcl.shrink.plan import Budget
    from sentcl.shrink.run import FAMILIES, ShrinkOptions, shrink

    target = args.budget if args.budget is not None else args.keep  # read by budget_option / keep_option
    families = tuple(f.strip() for f in args.families.split(",") if f.strip())
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown or not families:
        shown = ", ".join(unknown) or "none given"
        raise ValueError(f"--families {args.families!r}: {shown}; choose from {', '.join(FAMILIES)}")
    if args.output is None and not args.dry_run:
        raise ValueError("OUTPUT: give the run folder (only --dry-run needs none)")
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    evaluation = read_eval_data(args.pairs, args.retrieval, args.texts, tasks, args.split)  # before any work
    budget = Budget(
        corpus_sentences=args.corpus_sentences,
        layer_steps=args.layer_steps,
        static_steps=args.static_steps,
        batch_size=args.batch_size,
        choice_texts=args.choice_texts,
        eval_texts=len(evaluation.sentences(10**9)) or 3000,
        time_texts=args.time_texts,
        rounds=args.rounds,
        min_seconds=args.min_seconds,
    )
    opts = ShrinkOptions(
        teacher=args.teacher,
        output=args.output or Path("."),
        target=target,
        evaluation=evaluation,
        data_dir=resolve_data_dir(args.data_dir),
        budget=budget,
        threads=args.threads,
        families=families,
        cache=args.teacher_cache,
        seed=args.seed,
        dry_run=args.dry_run,
    )
    record = shrink(opts, log=lambda line: print(line, flush=True))
    if args.dry_run:
        print("dry run: nothing built or written")
        return 0
    print(record["sentence"])
    print(f"wrote {args.output}/pareto.md, pareto.json, pareto.png and the chosen model {record['model']}")
    return 0
