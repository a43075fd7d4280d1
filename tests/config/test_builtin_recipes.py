"""Built-in recipes (``--config NAME``, ``sentcl recipes``) and the install advice for a missing extra."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sentcl.cli import main
from sentcl.config.builtin import RECIPES_DIR, builtin_path, resolve_recipe
from sentcl.experiments.grid import load_grid
from sentcl.extras import EXTRA_OF_MODULE, extra_hint

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT_RECIPES = sorted((ROOT / "configs").glob("*.yaml"))
CHECKOUT_GRIDS = sorted((ROOT / "configs" / "experiments").glob("*.yaml"))
CHECKOUT_STATIC = sorted((ROOT / "configs" / "static").glob("*.yaml"))


def test_configs_is_a_link_to_the_packaged_recipes() -> None:
    assert (ROOT / "configs").is_symlink()
    assert (ROOT / "configs").resolve() == RECIPES_DIR
    staged = subprocess.run(["git", "ls-files", "-s", "configs"], cwd=ROOT, capture_output=True, text=True)
    assert staged.stdout.startswith("120000 "), staged.stdout  # git stores it as a link, not a folder copy


@pytest.mark.parametrize("spelling", ["demo", "demo.yaml", "configs/demo.yaml"])
def test_a_name_resolves_to_the_packaged_file(spelling: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no configs/ here
    path = resolve_recipe(spelling)
    assert path.read_bytes() == (ROOT / "configs" / "demo.yaml").read_bytes()


def test_a_path_wins_over_a_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "demo.yaml").write_text("training: {max_steps: 3}\n", encoding="utf-8")
    assert resolve_recipe("demo.yaml") == Path("demo.yaml")
    assert resolve_recipe("demo") == RECIPES_DIR / "demo.yaml"  # no file called "demo": the name


def test_a_folder_is_not_a_recipe(tmp_path: Path, monkeypatch, capsys, caplog) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    assert main(["train", "--config", "mine"]) == 2
    assert (
        capsys.readouterr().err.strip() == "sentcl train: error: config file mine is a directory, not a file"
    )
    (tmp_path / "demo").mkdir()  # named like a built-in recipe: it gives way to the built-in, and says so
    with caplog.at_level("WARNING"):
        assert resolve_recipe("demo") == RECIPES_DIR / "demo.yaml"
    assert "the folder demo is not a recipe, so the built-in recipe demo.yaml is used" in caplog.text


def test_names_never_leave_the_recipes_folder() -> None:
    assert builtin_path("../install") is None and builtin_path("/etc/passwd") is None
    assert builtin_path("experiments/../demo") is None and builtin_path("") is None


def test_unknown_recipe_lists_the_recipes(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--config", "no_such_recipe"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sentcl train: error: no_such_recipe: no such file")
    assert all(p.stem in err for p in CHECKOUT_RECIPES)
    assert main(["experiment", "no_such_grid", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "built-in experiment grids" in err and all(f"experiments/{p.stem}" in err for p in CHECKOUT_GRIDS)


def test_recipes_lists_every_file_and_show_prints_it(capsys) -> None:
    assert main(["recipes"]) == 0
    out = capsys.readouterr().out
    entries = [line for line in out.splitlines() if re.match(r"  \S", line)]  # wrapped lines indent more
    listed = {line.split()[0] for line in entries}
    expected = {p.stem for p in CHECKOUT_RECIPES} | {f"experiments/{p.stem}" for p in CHECKOUT_GRIDS}
    assert listed == expected | {p.stem for p in CHECKOUT_STATIC}  # static recipes: their own section
    assert "[...]" not in out and max(map(len, out.splitlines()[1:])) <= 110  # wrapped, never cut
    first = (ROOT / "configs" / "demo.yaml").read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
    assert " ".join(out.split()).count(" ".join(first.removesuffix(".").split())) == 1
    for name, path in (("demo", "demo.yaml"), ("dropout", "experiments/dropout.yaml")):
        assert main(["recipes", "show", name]) == 0
        assert capsys.readouterr().out == (ROOT / "configs" / path).read_text(encoding="utf-8")
    assert main(["recipes", "show", "nope"]) == 2
    assert "no built-in recipe named 'nope'" in capsys.readouterr().err


def test_a_grid_outside_the_checkout_finds_its_base_recipe_in_the_package(
    tmp_path: Path, monkeypatch
) -> None:
    """A wheel's user copies a grid anywhere: `base: configs/...` is the packaged recipe."""
    grid = shutil.copy(ROOT / "configs" / "experiments" / "dropout.yaml", tmp_path / "mine.yaml")
    monkeypatch.chdir(tmp_path)
    spec = load_grid(Path(grid))
    assert spec.base.read_bytes() == (ROOT / "configs" / "unsup_simcse_bert_base.yaml").read_bytes()
    assert load_grid(resolve_recipe("dropout", grids=True)).title == spec.title


def test_every_extra_named_in_advice_is_declared() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = declared["optional-dependencies"]
    for extra in set(EXTRA_OF_MODULE.values()):
        assert extra in extras, extra
        hint = extra_hint(extra)
        assert f"pip install -e '.[{extra}]'" in hint
        assert f"dist/sentcl-{declared['version']}-py3-none-any.whl[{extra}]" in hint


@pytest.mark.parametrize(
    ("argv", "module", "extra"),
    [(["serve", "some-model"], "uvicorn", "serve"), (["serve", "some-model"], "fastapi", "serve")],
)
def test_a_missing_extra_is_one_line_with_the_command(argv, module, extra, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ModuleNotFoundError
    for name in [m for m in sys.modules if m.startswith("sentcl.serve")]:
        monkeypatch.delitem(sys.modules, name)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sentcl {argv[0]}: error: {module} is not installed")
    assert extra_hint(extra) in err and "Traceback" not in err


def test_a_missing_extra_deeper_in_a_command_is_caught_by_the_cli(monkeypatch, capsys) -> None:
    """Any command: an ImportError of a module an extra provides becomes the one-line advice, exit 2."""
    import sentcl.cli.recipes as recipes_cli

    def needs_onnxruntime(args) -> int:
        import onnxruntime  # noqa: F401

        return 0

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setattr(recipes_cli, "handle", needs_onnxruntime)
    assert main(["recipes"]) == 2
    assert extra_hint("onnx") in capsys.readouterr().err


def test_shipped_recipes_carry_no_tracker_words_or_paths_outside_the_package() -> None:
    """`sentcl recipes show NAME` prints the file as it is: no issue numbers, source-paper seed numbers or paths
    to files that neither the package nor the site has (../shared/..., design notes)."""
    words = re.compile(r"\bissues?\b|\bseeds? ?0\d\d\b|\.\./shared|EXPERIMENTS\.md|ARCHITECTURE\.md", re.I)
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in [*CHECKOUT_RECIPES, *CHECKOUT_GRIDS]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if words.search(line)
    ]
    assert not found, found
    assert words.search("see ../shared/design/EXPERIMENTS.md") and words.search("(issue 15)")
