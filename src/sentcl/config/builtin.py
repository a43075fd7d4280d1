"""The recipes that ship inside the package (``sentcl/recipes/``; ``configs/`` in a checkout links to it).

``resolve_recipe`` turns what a user passes to ``--config`` (or to ``sentcl experiment``) into a file: an
existing path wins; otherwise a built-in recipe's name (``demo``, ``demo.yaml``, ``configs/demo.yaml``, or
``experiments/dropout`` for a grid). An unknown name is an error that lists the recipes. A static student's
recipes (``sentcl distill-static --config NAME``) live in ``static/``: ``static_recipe_path``. Torch-free, reads
no file: the bottom floor.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

RECIPES_DIR = Path(__file__).resolve().parents[1] / "recipes"
GRIDS_SUBDIR = "experiments"
STATIC_SUBDIR = "static"  # the recipes of sentcl distill-static (a schema of their own)
_CHECKOUT_PREFIX = "configs/"  # how a checkout's paths (docs, tests) name the same files


def recipe_names() -> list[str]:
    """Training recipes by name (file stem), sorted."""
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def grid_names() -> list[str]:
    """Experiment grids by name (``experiments/STEM``), sorted."""
    return sorted(f"{GRIDS_SUBDIR}/{p.stem}" for p in (RECIPES_DIR / GRIDS_SUBDIR).glob("*.yaml"))


def static_recipe_names() -> list[str]:
    """Static students' recipes by name (file stem), sorted."""
    return sorted(p.stem for p in (RECIPES_DIR / STATIC_SUBDIR).glob("*.yaml"))


def static_recipe_path(name: str) -> Path | None:
    """The built-in static recipe a name means (``distill_static``, ``distill_static.yaml``), or None."""
    key = name.removeprefix(_CHECKOUT_PREFIX).removeprefix(f"{STATIC_SUBDIR}/").removesuffix(".yaml")
    if not key or "/" in key or key.startswith("."):
        return None
    path = RECIPES_DIR / STATIC_SUBDIR / f"{key}.yaml"
    return path if path.is_file() else None


def builtin_path(name: str) -> Path | None:
    """The built-in file a name means (``demo``, ``demo.yaml``, ``configs/experiments/x.yaml``), or None."""
    key = name[len(_CHECKOUT_PREFIX) :] if name.startswith(_CHECKOUT_PREFIX) else name
    key = key.removesuffix(".yaml")
    if not key or key.startswith(("/", ".")) or ".." in Path(key).parts:
        return None
    path = RECIPES_DIR / f"{key}.yaml"
    return path if path.is_file() else None


def prefer(value: str | Path, path: Path, builtin: Path | None) -> Path:
    """Which of ``path`` (it exists) and the built-in recipe of the same name ``value`` means: a folder is never
    a recipe, so it gives way to the built-in; a file (or anything else there, which its reader names) is used.
    Where both exist, a warning says which one is used and how to pick the other."""
    if builtin is None or os.path.realpath(path) == os.path.realpath(builtin):  # a checkout's configs/ link
        return path
    if path.is_dir():
        logger.warning(
            "%s: the folder %s is not a recipe, so the built-in recipe %s is used; to use a file inside the "
            "folder, give its path (%s/FILE.yaml)",
            value,
            path,
            builtin.name,
            path,
        )
        return builtin
    logger.warning(
        "%s: the file %s is used, not the built-in recipe of that name; to use the built-in one, give its path "
        "%s",
        value,
        path,
        builtin,
    )
    return path


def resolve_recipe(value: str | Path, grids: bool = False) -> Path:
    """The file for ``--config VALUE``: an existing path as given, else the built-in recipe of that name.

    With ``grids`` (``sentcl experiment``) a bare grid name (``dropout``) is looked up in ``experiments/`` too,
    and the error for an unknown name lists the grids instead of the training recipes.
    """
    path = Path(value)
    names_to_try = [str(value)] + ([f"{GRIDS_SUBDIR}/{value}"] if grids else [])
    builtin = next((found for name in names_to_try if (found := builtin_path(name)) is not None), None)
    if os.path.lexists(path):  # anything there (a FIFO, a link loop): the reader says what it is
        return prefer(value, path, builtin)
    if builtin is not None:
        return builtin
    if static_recipe_path(str(value)) is not None:
        raise FileNotFoundError(
            f"{value} is a static student's recipe: run it with sentcl distill-static --config {value}"
        )
    kind, names = ("experiment grid", grid_names()) if grids else ("recipe", recipe_names())
    raise FileNotFoundError(
        f"{value}: no such file, and no built-in {kind} of that name; built-in {kind}s: {', '.join(names)}"
    )
