"""Command line: ``sentcl train | eval | encode | build-nli | search | report | experiment``. Every option has a help line."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sentcl.config import POOLERS, ConfigError, TrainConfig, describe, load_config
from sentcl.data.readers import DataFormatError, iter_text_lines
from sentcl.paths import DataNotFoundError, ModelNotFoundError, resolve_data_dir

logger = logging.getLogger("sentcl")


def _config_keys_epilog() -> str:
    rows = describe(TrainConfig)
    width = max(len(key) for key, _, _ in rows)
    lines = [f"  {key:<{width}}  {help_} (default {default})" for key, default, help_ in rows]
    return "config keys (YAML sections, or --set section.key=value):\n" + "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sentcl", description="Sentence embeddings by contrastive learning."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="Log debug messages.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "train",
        help="Train an encoder from a YAML recipe.",
        epilog=_config_keys_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", type=Path, help="YAML recipe (see configs/); omitted: all defaults.")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override one config key, e.g. training.batch_size=32 (repeatable).",
    )
    p.add_argument(
        "--data-dir", help="Data folder (sets data.data_dir; default $SENTCL_DATA or ../shared/data)."
    )
    p.add_argument("--output-dir", help="Run folder (sets training.output_dir).")
    p.add_argument(
        "--resume", action="store_true", help="Continue from the last checkpoint in the run folder."
    )
    p.set_defaults(func=cmd_train)

    from sentcl.evaluation.runner import TASKS, task_names

    p = sub.add_parser("eval", help="Evaluate a model on STS (and more) tasks.")
    p.add_argument(
        "--model", required=True, help="Local folder, hub id or offline short name (all-MiniLM-L6-v2)."
    )
    p.add_argument("--pooler", choices=POOLERS, help="Pooler (default: the model's saved one, else cls).")
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
    p.add_argument("--data-dir", help="Data folder (default $SENTCL_DATA or ../shared/data).")
    p.add_argument("--batch-size", type=int, default=128, help="Sentences per encoding batch.")
    p.add_argument(
        "--max-length",
        type=int,
        help="Truncate sentences to this many tokens (default: the model's limit, at most 512).",
    )
    p.add_argument(
        "--int8",
        action="store_true",
        help="Fast CPU inference: dynamic int8 quantisation of the Linear layers (docs/performance.md).",
    )
    p.add_argument("--output", type=Path, help="Write the results as JSON here.")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("encode", help="Embed the sentences of a text file (one a line) into a .npy file.")
    p.add_argument("--model", required=True, help="Local folder, hub id or offline short name.")
    p.add_argument(
        "--input",
        required=True,
        type=Path,
        help="UTF-8 text file, one sentence a line (row i of the output is line i).",
    )
    p.add_argument(
        "--output", required=True, type=Path, help="Output .npy file: float32 (N, D), input order."
    )
    p.add_argument("--pooler", choices=POOLERS, help="Pooler (default: the model's saved one, else cls).")
    p.add_argument("--batch-size", type=int, default=128, help="Sentences per encoding batch.")
    p.add_argument(
        "--max-length",
        type=int,
        help="Truncate sentences to this many tokens (default: the model's limit, at most 512).",
    )
    p.add_argument("--normalize", action="store_true", help="L2-normalise the embeddings.")
    p.add_argument(
        "--int8",
        action="store_true",
        help="Fast CPU inference: dynamic int8 quantisation of the Linear layers (docs/performance.md).",
    )
    p.set_defaults(func=cmd_encode)

    p = sub.add_parser(
        "build-nli", help="Build supervised-SimCSE triples (nli_for_simcse.csv) from SentEval's SNLI."
    )
    p.add_argument(
        "--senteval-snli", type=Path, help="SentEval SNLI folder (default: <data-dir>/senteval/SNLI)."
    )
    p.add_argument("--data-dir", help="Data folder (default $SENTCL_DATA or ../shared/data).")
    p.add_argument("--splits", nargs="+", default=["dev", "test"], help="Splits to read (s1.<split>, ...).")
    p.add_argument("--output", type=Path, required=True, help="CSV to write (header sent0,sent1,hard_neg).")
    p.add_argument("--with-neutral", action="store_true", help="Add a neutral hypothesis as a 4th column.")
    p.set_defaults(func=cmd_build_nli)
    _add_search_report_experiment(sub)
    return parser


def _add_search_report_experiment(sub: argparse._SubParsersAction) -> None:
    from sentcl.evaluation.runner import task_names
    from sentcl.retrieval import BACKENDS

    p = sub.add_parser("search", help="Nearest corpus sentences (cosine) for one or more queries.")
    p.add_argument("--model", required=True, help="Local folder, hub id or offline short name.")
    p.add_argument("--corpus", required=True, type=Path, help="UTF-8 text file, one sentence a line.")
    p.add_argument(
        "--query", action="append", default=[], metavar="TEXT", help="A query sentence (repeatable)."
    )
    p.add_argument("--queries", type=Path, help="A text file of queries, one a line.")
    p.add_argument("-k", type=int, default=5, help="Hits per query (default 5).")
    p.add_argument(
        "--index",
        type=Path,
        help="Folder to save the corpus embeddings in and reuse them from (rebuilt if corpus or model changed).",
    )
    p.add_argument(
        "--backend",
        choices=BACKENDS,
        default="auto",
        help="exact (numpy), faiss, or auto (faiss when installed and the corpus is large).",
    )
    p.add_argument("--pooler", choices=POOLERS, help="Pooler (default: the model's saved one, else cls).")
    p.add_argument("--batch-size", type=int, default=128, help="Sentences per encoding batch.")
    p.add_argument("--max-length", type=int, help="Truncate sentences to this many tokens.")
    p.add_argument("--json", action="store_true", help="Print the hits as JSON instead of a table.")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("report", help="Markdown report with tables and PNG plots for runs or models.")
    p.add_argument(
        "runs", nargs="+", metavar="RUN_DIR", help="Run folders, model folders or offline short names."
    )
    p.add_argument("--output", type=Path, default=Path("report"), help="Output folder (default ./report).")
    p.add_argument(
        "--eval-tasks",
        nargs="+",
        choices=task_names(),
        metavar="TASK",
        help="Tasks to show; ones results.json lacks are computed and cached "
        "(default: sts transfer_fast align_uniform anisotropy).",
    )
    p.add_argument("--data-dir", help="Data folder (default $SENTCL_DATA or ../shared/data).")
    p.add_argument("--batch-size", type=int, default=128, help="Sentences per encoding batch.")
    p.add_argument(
        "--pooler",
        choices=POOLERS,
        help="Pooler for model sources (runs keep their saved one); default: the model's saved one, else cls.",
    )
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("experiment", help="Run a grid of training runs and write the paper-style table.")
    p.add_argument("grid", type=Path, help="Grid file, e.g. configs/experiments/dropout.yaml.")
    p.add_argument("--variant", default="cpu", help="Variant of the grid (cpu or full; default cpu).")
    p.add_argument(
        "--output", type=Path, default=Path("docs/results"), help="Folder for NAME-VARIANT.md/.png."
    )
    p.add_argument(
        "--runs-dir", type=Path, default=Path("runs/experiments"), help="Run folders go below this."
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override a config key for every point (repeatable).",
    )
    p.add_argument(
        "--metric",
        choices=("stsb_dev", "stsb", "sts_avg"),
        help="Metric of the table instead of the grid's own (sts_avg needs eval.final_tasks to include sts).",
    )
    p.add_argument("--data-dir", help="Data folder (sets data.data_dir).")
    p.add_argument(
        "--dry-run", action="store_true", help="Check the grid and list its points; train nothing."
    )
    p.set_defaults(func=cmd_experiment)


def cmd_train(args: argparse.Namespace) -> int:
    from sentcl.evaluation.runner import format_results
    from sentcl.training.loop import train

    overrides = list(args.overrides)
    if args.data_dir:
        overrides.append(f"data.data_dir={args.data_dir}")
    if args.output_dir:
        overrides.append(f"training.output_dir={args.output_dir}")
    cfg = load_config(TrainConfig, args.config, overrides)
    result = train(cfg, resume=args.resume)
    if result.best_score is None:  # not rank 0 of a torchrun job: rank 0 reports
        return 0
    print(
        f"best {cfg.eval.dev_task} = {result.best_score:.2f} at step {result.best_step}; model in {result.output_dir / 'best'}"
    )
    columns = {"start model": result.start_results} if result.start_results else {}
    print(format_results({**columns, "trained": result.results}))
    return 0


def _load_model(args: argparse.Namespace):
    from sentcl.modeling.dual import load_encoder

    model = load_encoder(args.model, pooler=args.pooler)
    if getattr(args, "int8", False):
        from sentcl.modeling.quantize import quantize_int8

        model = quantize_int8(model)
    return model


def cmd_eval(args: argparse.Namespace) -> int:
    from sentcl.evaluation.runner import evaluate, format_results

    if args.batch_size <= 0:
        raise ValueError(f"--batch-size must be positive, got {args.batch_size}")
    data_dir = resolve_data_dir(args.data_dir)
    model = _load_model(args)
    results = evaluate(
        lambda s: model.encode(s, batch_size=args.batch_size, max_length=args.max_length),
        data_dir,
        args.tasks,
    )
    print(format_results({args.model: results}))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def cmd_encode(args: argparse.Namespace) -> int:
    if args.batch_size <= 0:
        raise ValueError(f"--batch-size must be positive, got {args.batch_size}")
    if not args.input.is_file():
        raise FileNotFoundError(f"input file {args.input} does not exist")
    # row i of the output is line i, empty or not
    sentences = [text for _, text in iter_text_lines(args.input)]
    empty = sum(1 for s in sentences if not s.strip())
    if empty:
        logger.warning(
            "%s: %d empty lines are encoded as empty sentences to keep rows aligned", args.input, empty
        )
    model = _load_model(args)
    embeddings = model.encode(
        sentences,
        batch_size=args.batch_size,
        normalize=args.normalize,
        show_progress=True,
        max_length=args.max_length,
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    np.save(args.output, np.asarray(embeddings, dtype=np.float32).reshape(len(sentences), -1))
    print(f"wrote {len(sentences)} x {model.embedding_dim} embeddings to {args.output}")
    return 0


def cmd_build_nli(args: argparse.Namespace) -> int:
    from sentcl.data.nli import build_nli_from_senteval

    folder = args.senteval_snli or resolve_data_dir(args.data_dir) / "senteval" / "SNLI"
    stats = build_nli_from_senteval(folder, args.splits, args.output, with_neutral=args.with_neutral)
    skipped = ", ".join(f"{k.removeprefix('skipped_')}: {v}" for k, v in stats.skipped().items() if v)
    print(
        f"{stats.records} records, {stats.premises} premises -> {stats.triples} examples written to "
        f"{args.output}; skipped premises/records: {skipped or 'none'}"
    )
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from sentcl.search_cli import format_hits, hits_json, read_sentences, run_search

    if args.batch_size <= 0:
        raise ValueError(f"--batch-size must be positive, got {args.batch_size}")
    queries = list(args.query)
    if args.queries:
        queries += read_sentences(args.queries, "queries")[1]
    hits, built = run_search(
        args.model,
        args.corpus,
        queries,
        k=args.k,
        index_dir=args.index,
        backend=args.backend,
        pooler=args.pooler,
        batch_size=args.batch_size,
        max_length=args.max_length,
    )
    if args.index:
        logger.info("index %s: %s", args.index, "built and saved" if built else "reused")
    print(
        json.dumps(hits_json(queries, hits), indent=2, ensure_ascii=False)
        if args.json
        else format_hits(queries, hits)
    )
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from sentcl.report import DEFAULT_TASKS, make_report

    if args.batch_size <= 0:
        raise ValueError(f"--batch-size must be positive, got {args.batch_size}")
    report = make_report(
        args.runs, args.output, args.eval_tasks or DEFAULT_TASKS, args.data_dir, args.batch_size, args.pooler
    )
    print(f"wrote {report.markdown} and {len(report.figures)} figure(s)")
    return 0


def cmd_experiment(args: argparse.Namespace) -> int:
    from sentcl.experiments import load_grid, point_configs, run_grid
    from sentcl.report.grid import write_grid_report

    overrides = list(args.overrides) + ([f"data.data_dir={args.data_dir}"] if args.data_dir else [])
    spec = load_grid(args.grid)
    if args.metric:
        spec = dataclasses.replace(spec, metric=args.metric)
    if args.dry_run:
        for point, cfg in point_configs(spec, args.variant, args.runs_dir, overrides):
            print(f"{point.name}: {cfg.training.output_dir}  {' '.join(point.overrides)}")
        return 0
    rows = run_grid(spec, args.variant, args.runs_dir, overrides)
    command = " ".join(["sentcl experiment", str(args.grid), "--variant", args.variant])
    command += f" --metric {args.metric}" if args.metric else ""
    md, png = write_grid_report(spec, args.variant, rows, args.output, command)
    print(f"wrote {md} and {png}")
    return 0


USER_ERRORS = (
    ConfigError,
    DataFormatError,
    DataNotFoundError,
    ModelNotFoundError,
    FileNotFoundError,
    ValueError,
    KeyError,
)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import transformers

    transformers.utils.logging.disable_progress_bar()  # per-file load/save bars drown the training bar
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return int(args.func(args))
    except USER_ERRORS as err:
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"sentcl {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
