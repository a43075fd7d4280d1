"""``sentcl eval --unlabelled FILE``: the options and the run of the label-free measures on the user's text."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from sentcl.cli.options import positive_int
from sentcl.config.unlabelled import parse_compression
from sentcl.evaluation.labelfree.corpus import DEFAULT_MAX_SENTENCES, UnlabelledText, read_unlabelled
from sentcl.files.kinds import model_name, read_file, read_folder
from sentcl.files.slots import declare

logger = logging.getLogger(__name__)


@declare("name")
def compression_option(text: str) -> str:
    try:
        return parse_compression(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--compression ")) from None


def add_unlabelled_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--unlabelled",
        type=read_file,
        metavar="FILE",
        help="A text file of the user's own sentences, one a line, no labels: print the label-free measures "
        "(alignment, uniformity, RankMe, anisotropy, self-retrieval, ...), each with its paper.",
    )
    p.add_argument(
        "--unlabelled-sample",
        type=positive_int,
        default=DEFAULT_MAX_SENTENCES,
        metavar="N",
        help=f"With --unlabelled: a seeded reservoir sample of N lines of a larger file (default "
        f"{DEFAULT_MAX_SENTENCES:,}).",
    )
    p.add_argument(
        "--teacher",
        type=model_name,
        metavar="MODEL",
        help="With --unlabelled: the teacher of a student model: top-10 neighbour agreement with it.",
    )
    p.add_argument(
        "--compression",
        nargs="+",
        type=compression_option,
        default=[],
        metavar="KIND",
        help="With --unlabelled: recall@10 of compressed vectors against the float ones: int8, binary, or a "
        "truncation dimension K (Matryoshka), e.g. --compression int8 binary 128.",
    )
    p.add_argument(
        "--index",
        type=read_folder,
        metavar="DIR",
        help="With --unlabelled: recall@10 of this `sentcl index build` folder for the sentences as queries.",
    )


def read_unlabelled_option(args: argparse.Namespace) -> UnlabelledText | None:
    """The --unlabelled file, read before the model loads; its companion options without it are an error."""
    if args.unlabelled is None:
        given = [
            f
            for f, v in (
                ("--teacher", args.teacher),
                ("--compression", args.compression),
                ("--index", args.index),
            )
            if v
        ]
        if given:
            raise ValueError(
                f"{', '.join(given)} measure(s) the model on unlabelled text: add --unlabelled FILE"
            )
        return None
    return read_unlabelled(args.unlabelled, args.unlabelled_sample)


def run_unlabelled(args: argparse.Namespace, model: Any, text: UnlabelledText) -> dict[str, Any]:
    """Print the measures table; return the JSON-ready results."""
    from sentcl.evaluation.labelfree.report import format_table, label_free, model_views
    from sentcl.modeling.open import open_model

    print(text.describe())
    views = model_views(model, text.sentences, args.batch_size)
    teacher = None
    if args.teacher:
        teacher = model_views(open_model(args.teacher), text.sentences, args.batch_size)
    result = label_free(views, teacher, args.compression)
    if args.index is not None:
        from sentcl.evaluation.labelfree.index_recall import index_recall

        result["index_recall_at_10"] = index_recall(args.index, views.get("plain"))
    print(format_table(result))
    return {"corpus": text.summary(), **result}
