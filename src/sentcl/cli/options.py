"""Options shared by several commands, declared once, and the errors that count as the user's.

Light: building every command's parser imports no model, engine or evaluation code (``sentcl --help``
answers at once); what runs a command is imported when it runs.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, TypeVar

from sentcl.config import ConfigError
from sentcl.config.names import ENGINE_NAMES
from sentcl.config.poolers import POOLERS
from sentcl.config.typed import check_max_length
from sentcl.data.download import DownloadError
from sentcl.data.readers import DataFormatError
from sentcl.defaults import ENCODE_BATCH_SIZE, MIN_MAX_LENGTH
from sentcl.files.kinds import model_name, name_value, read_folder_name, setting
from sentcl.files.paths import DATA_DIR_DEFAULT_TEXT, DataNotFoundError, ModelNotFoundError
from sentcl.files.slots import declare
from sentcl.types import EncodeFn

T = TypeVar("T")

# Raised for a user's mistake: printed as one line ``sentcl CMD: error: ...`` with exit status 2.
USER_ERRORS: tuple[type[BaseException], ...] = (
    ConfigError,
    DataFormatError,
    DataNotFoundError,
    ModelNotFoundError,
    DownloadError,
    FileNotFoundError,
    ValueError,
    KeyError,
)


def user_error_message(err: BaseException) -> str:
    """The message of a user error (a KeyError's repr quotes it: use its argument)."""
    return str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)


@declare("count")
def positive_int(text: str) -> int:
    """argparse type: a whole number > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {value}")
    return value


@declare("max-length")
def max_length_arg(text: str) -> int:
    """argparse type of ``--max-length``: the rule of every truncation (``check_max_length``: 3 or more), read
    before the model is known, so for every model alike (a static model, which adds no [CLS] and [SEP], too:
    one value then works with any model; our choice, said in the message)."""
    value = positive_int(text)
    try:
        check_max_length("--max-length", value)
    except ConfigError:
        raise argparse.ArgumentTypeError(
            f"{value} is below {MIN_MAX_LENGTH}, the least truncation sentcl takes for any model: a transformer's "
            "[CLS] and [SEP] would leave no room for a real token (a static model, which adds neither, is held to "
            f"the same least); use {MIN_MAX_LENGTH} or more"
        ) from None
    return value


def add_data_dir(p: argparse.ArgumentParser, help_: str | None = None) -> None:
    p.add_argument(
        "--data-dir", type=read_folder_name, help=help_ or f"Data folder (default {DATA_DIR_DEFAULT_TEXT})."
    )


def add_overwrite(p: argparse.ArgumentParser, what: str) -> None:
    """``--overwrite``: replace an existing output (``sentcl.files.output``; without it sentcl refuses)."""
    p.add_argument("--overwrite", action="store_true", help=f"Replace an existing {what}.")


def add_overrides(p: argparse.ArgumentParser, help_: str) -> None:
    p.add_argument(
        "--set", type=setting, dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help_
    )


def add_pooler(p: argparse.ArgumentParser, help_: str | None = None) -> None:
    p.add_argument(
        "--pooler",
        choices=POOLERS,
        help=help_
        or "Pooler (default: the folder's own: sentcl.json, sentence-transformers Pooling, else cls).",
    )


def add_batch_size(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=ENCODE_BATCH_SIZE,
        help=f"Sentences per encoding batch (default {ENCODE_BATCH_SIZE}).",
    )


def add_model_options(p: argparse.ArgumentParser, *, model_required: bool = True) -> None:
    """--model, --pooler, --batch-size, --max-length, --int8: how a command loads and runs an encoder."""
    p.add_argument(
        "--model",
        type=model_name,
        required=model_required,
        help="Local folder, hub id or offline short name (all-MiniLM-L6-v2).",
    )
    add_pooler(p)
    add_batch_size(p)
    p.add_argument(
        "--max-length",
        type=max_length_arg,
        help="Truncate sentences to this many tokens (default: the model's limit, at most 512).",
    )
    p.add_argument(
        "--int8",
        action="store_true",
        help="Fast CPU inference: dynamic int8 quantisation of the Linear layers (docs/performance.md).",
    )
    p.add_argument(
        "--truncate-dim",
        type=positive_int,
        metavar="K",
        help="Keep the first K coordinates of each embedding (a Matryoshka-trained model; cosine is "
        "scale-free, so the prefix is used as it is). Default: an --index's own truncation, else the folder's "
        "sentcl.json truncate_dim, else all.",
    )
    add_backend(p)


def add_backend(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--backend",
        dest="model_backend",
        choices=("auto", "torch", "onnx"),
        default="auto",
        help="Run the model with PyTorch or onnxruntime (onnx: a folder from `sentcl export --format onnx`); "
        "auto: onnx for an exported folder, else torch.",
    )


def add_engine_options(p: argparse.ArgumentParser) -> None:
    """--engine and --ray-address: where the encoder runs (``sentcl.engines``)."""
    p.add_argument(
        "--engine",
        choices=ENGINE_NAMES,
        default="local",
        help="local: in this process (or each process of a torchrun); ray: a Ray Data actor pool, the model "
        "once per actor, GPUs where the cluster has them (default local).",
    )
    p.add_argument(
        "--ray-address",
        type=name_value,
        help="With --engine ray: the cluster (host:port, ray://host:port or auto); default: a local Ray.",
    )


def model_spec(args: argparse.Namespace) -> Any:
    """What ``add_model_options`` describes, for an engine to open where it runs (``sentcl.engines``)."""
    from sentcl.engines import ModelSpec

    return ModelSpec(
        args.model,
        pooler=args.pooler,
        backend=getattr(args, "model_backend", "auto"),
        int8=getattr(args, "int8", False),
        truncate_dim=getattr(args, "truncate_dim", None),
    )


def load_model(args: argparse.Namespace) -> Any:
    """The encoder that ``add_model_options`` describes, opened here (``model_spec``'s ``open``:
    ``sentcl.modeling.open_model``)."""
    return model_spec(args).open()


def settings_from_args(cls: type[T], args: argparse.Namespace, **given: Any) -> T:
    """A settings dataclass from the options named like its fields (a field with no option keeps its
    default); ``given`` sets the fields whose option is named otherwise."""
    names = [f.name for f in dataclasses.fields(cls) if hasattr(args, f.name) and f.name not in given]  # type: ignore[arg-type]
    return cls(**{name: getattr(args, name) for name in names}, **given)


def encode_fn(model: Any, args: argparse.Namespace) -> EncodeFn:
    """sentences -> embeddings with the command's batch size and length (``sentcl.modeling.encode_fn``)."""
    from sentcl.modeling.encode_adapter import encode_fn as model_encode_fn

    return model_encode_fn(model, args.batch_size, args.max_length)
