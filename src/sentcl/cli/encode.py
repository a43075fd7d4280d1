"""``sentcl encode``: embed the sentences of a text file (one a line) into a .npy file."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np

from sentcl.cli.options import add_model_options, load_model
from sentcl.data.readers import iter_text_lines

logger = logging.getLogger("sentcl")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("encode", help="Embed the sentences of a text file (one a line) into a .npy file.")
    add_model_options(p)
    p.add_argument(
        "--input",
        required=True,
        type=Path,
        help="UTF-8 text file, one sentence a line (row i of the output is line i).",
    )
    p.add_argument(
        "--output", required=True, type=Path, help="Output .npy file: float32 (N, D), input order."
    )
    p.add_argument("--normalize", action="store_true", help="L2-normalise the embeddings.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not args.input.is_file():
        raise FileNotFoundError(f"input file {args.input} does not exist")
    # row i of the output is line i, empty or not
    sentences = [text for _, text in iter_text_lines(args.input)]
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
    np.save(args.output, np.asarray(embeddings, dtype=np.float32).reshape(len(sentences), -1))
    print(f"wrote {len(sentences)} x {model.embedding_dim} embeddings to {args.output}")
    return 0
