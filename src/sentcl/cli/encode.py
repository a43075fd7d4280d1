"""``sentcl encode``: embed the texts of a file (a text file, JSON Lines or Parquet; local or on object storage)
into a .npy file, or into shards, with an engine (``sentcl.engines``: in process, torchrun or Ray Data)."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from sentcl.cli.options import add_engine_options, add_model_options, add_overwrite, model_spec, positive_int
from sentcl.config.names import INPUT_FORMATS
from sentcl.files.atomic import atomic_save_npy
from sentcl.files.kinds import name_value, read_source, write_path
from sentcl.files.output import Input, claim_file, claim_folder, model_input
from sentcl.files.pathcheck import check_output_dir

if TYPE_CHECKING:
    from sentcl.engines import EncodeSettings
    from sentcl.engines.sources import Source

logger = logging.getLogger("sentcl")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "encode", help="Embed the texts of a file (one a line, JSONL or Parquet) into a .npy file."
    )
    add_model_options(p)
    p.add_argument(
        "--input",
        required=True,
        type=read_source,
        help="Text file (UTF-8, one sentence a line; row i of the output is line i), JSON Lines or Parquet "
        "(by suffix, or --input-format); a local path or a URI (s3://bucket/key; AWS_ENDPOINT_URL names an "
        "S3-compatible server).",
    )
    p.add_argument(
        "--input-format", choices=INPUT_FORMATS, help="The input's format (default: from its suffix)."
    )
    p.add_argument(
        "--text-field",
        type=name_value,
        default="text",
        help="JSON Lines field or Parquet column of the text (default text).",
    )
    p.add_argument(
        "--output",
        required=True,
        type=write_path,
        help="Output .npy file: float32 (N, D), input order (the name must end in .npy); "
        "with --shard-size, a folder of shards.",
    )
    p.add_argument("--normalize", action="store_true", help="L2-normalise the embeddings.")
    p.add_argument(
        "--shard-size",
        type=positive_int,
        help="Stream the input and write .npy shards of this many lines plus manifest.json into the --output "
        "folder; resumable (finished shards are skipped); under torchrun ranks share the shards.",
    )
    add_engine_options(p)
    add_overwrite(p, ".npy file at --output (a folder of shards is resumed, never replaced)")
    p.set_defaults(func=handle)


def _inputs(source: Source, args: argparse.Namespace) -> list[Input]:
    return [*([] if source.remote else [Input(Path(source.uri), "--input")]), *model_input(args.model)]


def handle(args: argparse.Namespace) -> int:
    from sentcl.engines import EncodeSettings, open_engine
    from sentcl.engines.sources import check_source, parse_source, read_texts

    # the input, then the output: both checked before the model loads and the corpus is encoded
    source = parse_source(args.input, args.input_format, args.text_field)
    check_source(source)
    settings = EncodeSettings(args.batch_size, args.max_length, args.normalize)
    if args.shard_size:
        return run_sharded(args, source, settings)
    if args.output.suffix != ".npy":
        raise ValueError(
            f"--output {args.output} must end in .npy (numpy would write {args.output}.npy); "
            "for a folder of shards add --shard-size N"
        )
    if args.output.is_dir():
        raise ValueError(f"--output {args.output} is a directory; give a .npy file path")
    claim_file(args.output, "--output", _inputs(source, args), overwrite=args.overwrite)
    # row i of the output is text i, empty or not
    sentences = read_texts(source)
    if not sentences:
        raise ValueError(f"input file {args.input} is empty: nothing to encode")
    empty = sum(1 for s in sentences if not s.strip())
    if empty:
        logger.warning(
            "%s: %d empty lines are encoded as empty sentences to keep rows aligned", args.input, empty
        )
    engine = open_engine(args.engine, args.ray_address)
    try:
        emb = engine.encode(model_spec(args), sentences, settings)  # (N, D)
    finally:
        engine.close()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    atomic_save_npy(args.output, emb)
    print(f"wrote {len(sentences)} x {emb.shape[1]} embeddings to {args.output}")
    return 0


def run_sharded(args: argparse.Namespace, source: Source, settings: EncodeSettings) -> int:
    """Shards + manifest under the --output folder (sentcl.data.shards), by the chosen engine."""
    from sentcl.engines import open_engine

    if args.output.exists() and not args.output.is_dir():
        raise ValueError(f"--output {args.output} is a file; with --shard-size it must be a folder")
    claim_folder(args.output, "shards", "--output", _inputs(source, args))
    check_output_dir(args.output, "--output")
    engine = open_engine(args.engine, args.ray_address)
    try:
        manifest = engine.encode_shards(model_spec(args), source, args.output, args.shard_size, settings)
    finally:
        engine.close()
    if os.environ.get("RANK", "0") == "0":  # under torchrun, one line from the first process
        print(
            f"wrote {manifest['rows']} x {manifest['dim']} embeddings in {len(manifest['shards'])} shards "
            f"to {args.output} ({args.output / 'manifest.json'})"
        )
    return 0
