"""``sentcl train``: train an encoder from a YAML recipe."""

from __future__ import annotations

import argparse
import json
import sys

from sentcl.cli.options import add_overrides
from sentcl.config import TrainConfig, describe, load_config
from sentcl.config.builtin import resolve_recipe
from sentcl.files.kinds import own_folder_name, read_folder_name, recipe
from sentcl.files.paths import DATA_DIR_DEFAULT_TEXT
from sentcl.files.shown import shown


def _config_keys_epilog() -> str:
    rows = describe(TrainConfig)
    width = max(len(key) for key, _, _ in rows)
    lines = [f"  {key:<{width}}  {help_} (default {default})" for key, default, help_ in rows]
    return "config keys (YAML sections, or --set section.key=value):\n" + "\n".join(lines)


def _config_keys_in_help(p: argparse.ArgumentParser) -> None:
    """The config keys as the help's epilog, worked out when the help is shown (not for every command line)."""
    format_help = p.format_help

    def with_keys() -> str:
        if p.epilog is None:
            p.epilog = _config_keys_epilog()
        return format_help()

    p.format_help = with_keys  # type: ignore[method-assign]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="Train an encoder from a YAML recipe.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _config_keys_in_help(p)
    p.add_argument(
        "--config",
        type=recipe,
        help="YAML recipe: a path, or a built-in recipe's name (sentcl recipes lists them; a path wins when "
        "both exist); omitted: all defaults.",
    )
    add_overrides(p, "Override one config key, e.g. training.batch_size=32 (repeatable).")
    p.add_argument(
        "--data-dir",
        type=read_folder_name,
        help=f"Data folder (sets data.data_dir; default {DATA_DIR_DEFAULT_TEXT}).",
    )
    p.add_argument("--output-dir", type=own_folder_name, help="Run folder (sets training.output_dir).")
    p.add_argument(
        "--resume", action="store_true", help="Continue from the last checkpoint in the run folder."
    )
    p.set_defaults(func=handle, evaluates=True)


def _failed(message: str) -> int:
    """The run failed (not the user's input): one line, exit status 1."""
    print(f"sentcl train: error: {shown(message, lines=True)}", file=sys.stderr)
    return 1


def handle(args: argparse.Namespace) -> int:
    from sentcl.evaluation.runner import format_results
    from sentcl.training.checkpoint import CheckpointError
    from sentcl.training.loop import train
    from sentcl.training.start_columns import result_columns
    from sentcl.training.step import TrainingDiverged, TrainingStalled

    overrides = list(args.overrides)
    if args.data_dir is not None:  # as quoted YAML text: a folder named 'yes', '123' or '[a' stays a path
        overrides.append(f"data.data_dir={json.dumps(args.data_dir)}")
    if args.output_dir is not None:
        overrides.append(f"training.output_dir={json.dumps(args.output_dir)}")
    recipe = resolve_recipe(args.config) if args.config is not None else None
    cfg = load_config(TrainConfig, recipe, overrides)
    try:
        result = train(cfg, resume=args.resume)
    except (TrainingDiverged, TrainingStalled, CheckpointError) as err:
        return _failed(str(err))
    except FileNotFoundError:
        raise  # the user's (a missing file): exit 2, like every command
    except OSError as err:  # a full disk, a read-only filesystem, a folder where a file should be, ...
        where = f": {err.filename}" if err.filename else ""
        return _failed(f"{err.strerror or err}{where}")
    if result.best_score is None:  # not rank 0 of a torchrun job: rank 0 reports
        return 0
    print(
        f"best {cfg.eval.dev_task} = {result.best_score:.2f} at step {result.best_step}; model in {result.output_dir / 'best'}"
    )
    print(
        format_results(
            result_columns(result.results, cfg.model.pooler, result.start_results, result.start_own)
        )
    )
    return 0
