"""``sentcl encode``: embed the sentences of a text file (one a line) into a .npy file, or into shards."""

from __future__ import annotations

import argparse
import logging

from sentcl.cli.options import add_model_options, add_overwrite, load_model, positive_int
from sentcl.data.readers import iter_text_lines, require_file
from sentcl.files.atomic import atomic_save_npy
from sentcl.files.kinds import read_file, write_path
from sentcl.files.output import Input, claim_file, claim_folder, model_input
from sentcl.files.pathcheck import check_output_dir

logger = logging.getLogger("sentcl")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("encode", help="Embed the sentences of a text file (one a line) into a .npy file.")
    add_model_options(p)
    p.add_argument(
        "--input",
        required=True,
        type=read_file,
        help="UTF-8 text file, one sentence a line (row i of the output is line i).",
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
    add_overwrite(p, ".npy file at --output (a folder of shards is resumed, never replaced)")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    import numpy as np

    # the input, then the output: both checked before the model loads and the corpus is encoded
    require_file(args.input, "input")
    if args.shard_size:
        return run_sharded(args)
    if args.output.suffix != ".npy":
        raise ValueError(
            f"--output {args.output} must end in .npy (numpy would write {args.output}.npy); "
            "for a folder of shards add --shard-size N"
        )
    if args.output.is_dir():
        raise ValueError(f"--output {args.output} is a directory; give a .npy file path")
    inputs = [Input(args.input, "--input"), *model_input(args.model)]
    claim_file(args.output, "--output", inputs, overwrite=args.overwrite)
    # row i of the output is line i, empty or not
    sentences = [text for _, text in iter_text_lines(args.input, "input")]
    if not sentences:
        raise ValueError(f"input file {args.input} is empty: nothing to encode")
    empty = sum(1 for s in sentences if not s.strip())
    if empty:
        logger.warning(
            "%s: %d empty lines are encoded as empty sentences to keep rows aligned", args.input, empty
        )
    model = load_model(args)
    embeddings = model.encode(
        sentences,
        batch_size=args.batch_size,
        normalize=args.normalize,
        show_progress=True,
        max_length=args.max_length,
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    emb = np.asarray(embeddings, dtype=np.float32).reshape(len(sentences), -1)  # (N, D)
    atomic_save_npy(args.output, emb)
    print(f"wrote {len(sentences)} x {emb.shape[1]} embeddings to {args.output}")
    return 0


def run_sharded(args: argparse.Namespace) -> int:
    """Shards + manifest under the --output folder (sentcl.data.shards); ranks split them under torchrun."""
    from sentcl import distributed
    from sentcl.data.shards import encode_shards

    if args.output.exists() and not args.output.is_dir():
        raise ValueError(f"--output {args.output} is a file; with --shard-size it must be a folder")
    claim_folder(args.output, "shards", "--output", [Input(args.input, "--input"), *model_input(args.model)])
    check_output_dir(args.output, "--output")
    joined = distributed.init_from_env()
    main_process = distributed.is_main_process()  # asked before shutdown: afterwards every rank reads as 0
    try:
        model = load_model(args)
        if joined and hasattr(model, "to"):
            model.to(distributed.default_device())
        manifest = encode_shards(
            model,
            args.input,
            args.output,
            args.shard_size,
            model_name=args.model,
            batch_size=args.batch_size,
            max_length=args.max_length,
            normalize=args.normalize,
        )
    finally:
        if joined:
            distributed.shutdown()
    if main_process:
        print(
            f"wrote {manifest['rows']} x {manifest['dim']} embeddings in {len(manifest['shards'])} shards "
            f"to {args.output} ({args.output / 'manifest.json'})"
        )
    return 0
