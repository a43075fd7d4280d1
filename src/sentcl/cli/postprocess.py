"""``sentcl postprocess``: fit whitening, BERT-flow or PCA on a model's vectors of a file of sentences and save
the model with it (no training of the encoder); every command that loads the new folder applies it."""

from __future__ import annotations

import argparse
from pathlib import Path

from sentcl.cli.options import add_batch_size, add_data_dir, add_pooler, positive_int
from sentcl.files.kinds import finite_float, model_name, own_folder, read_file, whole_number
from sentcl.files.pathcheck import check_output_dir


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "postprocess",
        help="Fit whitening, BERT-flow or PCA on a file of sentences and save the model with it.",
        description="Whitening (Su et al. 2021): x' = (x - mu) U L^(-1/2), optionally the first --dim columns. "
        "BERT-flow (Li et al. 2020): a Glow trained by maximum likelihood on the frozen vectors; the vector "
        "is its Gaussian latent. PCA: y = W (x - mu), W the top --dim principal directions, a Dense layer before the "
        "model's normalisation. See docs/postprocess.md.",
    )
    p.add_argument("method", choices=("whitening", "flow", "pca"), help="What to fit.")
    p.add_argument(
        "--model", type=model_name, required=True, help="Local folder, hub id or offline short name."
    )
    add_pooler(p)
    add_batch_size(p)
    p.add_argument(
        "--fit-file",
        dest="fit_files",
        action="append",
        required=True,
        type=read_file,
        help="Sentences to fit on (repeatable): a text file, one a line, or a .csv with a header (every field "
        "is a sentence, e.g. nli_for_simcse.csv). A relative path not found here is looked up in the data "
        "folder.",
    )
    p.add_argument("--output", required=True, type=own_folder, help="New model folder (must not exist).")
    p.add_argument(
        "--dim",
        type=positive_int,
        help="Whitening: keep the first k dimensions (default all). PCA: the output dimension (required).",
    )
    p.add_argument(
        "--no-center",
        dest="center",
        action="store_false",
        help="PCA: no bias (y = W x, as sentence-transformers' dimensionality-reduction example) instead of "
        "y = W (x - mu).",
    )
    p.add_argument("--max-sentences", type=positive_int, help="Fit on at most this many sentences.")
    p.add_argument(
        "--epochs", type=positive_int, default=1, help="Flow: passes over the sentences (default 1)."
    )
    p.add_argument("--steps", type=positive_int, help="Flow: optimizer steps (overrides --epochs).")
    p.add_argument("--flow-batch-size", type=positive_int, default=32, help="Flow: batch size (default 32).")
    p.add_argument(
        "--learning-rate", type=finite_float, default=1e-3, help="Flow: Adam learning rate (default 1e-3)."
    )
    p.add_argument("--levels", type=positive_int, default=3, help="Flow: Glow levels (default 3).")
    p.add_argument("--depth", type=positive_int, default=3, help="Flow: steps per level (default 3).")
    p.add_argument(
        "--width", type=positive_int, default=32, help="Flow: coupling network width (default 32)."
    )
    p.add_argument(
        "--seed", type=whole_number, default=0, help="Flow: initialisation and batch order (default 0)."
    )
    add_data_dir(p)
    p.set_defaults(func=handle)


def fit_file_path(path: Path, data_dir: str | None) -> Path:
    """``path`` as given, else below the data folder (as recipes name data files)."""
    if path.exists() or path.is_absolute():
        return path
    from sentcl.files.paths import DataNotFoundError, resolve_data_dir

    try:
        candidate = resolve_data_dir(data_dir) / path
    except DataNotFoundError:
        return path
    return candidate if candidate.exists() else path


def handle(args: argparse.Namespace) -> int:
    from sentcl.files.output import Input, claim_folder, model_input, write_folder
    from sentcl.modeling.encoder import SentenceEncoder
    from sentcl.modeling.open import open_model
    from sentcl.postprocess.fit import PostprocessSettings, postprocess_model

    if args.output.exists():
        raise ValueError(
            f"--output {args.output} already exists; give a new folder (a model is never overwritten)"
        )
    files = [fit_file_path(f, args.data_dir) for f in args.fit_files]
    inputs = [Input(f, "--fit-file") for f in files] + model_input(args.model)
    claim_folder(args.output, "model", "--output", inputs, replace=True)  # never onto or inside an input
    check_output_dir(args.output, "--output", whole=True)  # before the fit
    if args.method == "whitening" and args.steps is not None:
        raise ValueError("--steps applies to flow, not whitening")
    if args.method == "pca" and args.dim is None:
        raise ValueError("pca needs --dim (the output dimension)")
    if args.method != "pca" and not args.center:
        raise ValueError("--no-center applies to pca")
    if args.method == "flow" and args.dim is not None:
        raise ValueError("--dim applies to whitening (a flow keeps every dimension)")
    settings = PostprocessSettings(
        method=args.method,
        dim=args.dim,
        epochs=args.epochs,
        steps=args.steps,
        batch_size=args.flow_batch_size,
        learning_rate=args.learning_rate,
        levels=args.levels,
        depth=args.depth,
        width=args.width,
        seed=args.seed,
        max_sentences=args.max_sentences,
        center=args.center,
    )
    encoder = open_model(args.model, pooler=args.pooler)
    if not isinstance(encoder, SentenceEncoder):
        raise ValueError(
            f"--model {args.model}: post-processing fits one PyTorch encoder, not a {type(encoder).__name__}"
        )
    postprocess_model(encoder, settings, files, args.batch_size)
    write_folder(args.output, "model", encoder.save_pretrained, "--output", inputs)
    info = encoder.postprocess
    kept = (
        f"; {info['dim']} dimensions keep {100 * info['explained_variance_ratio']:.2f}% of the variance"
        if args.method == "pca"
        else ""
    )
    print(f"wrote {args.output} ({args.method} fitted on {info['sentences']} sentences{kept})")
    return 0
