"""Install anywhere: the wheel of ``python -m build``, installed into a fresh venv, run from outside the checkout.

The fresh venv reuses the development venv's installed libraries (torch, transformers, ...) through a
``.pth`` line naming that site-packages folder: a plain path line, so the development venv's own ``.pth``
files (its editable install of sentcl among them) are not processed, and ``import sentcl`` can only find
the wheel's copy. The wheel is installed with ``--no-deps``.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sentcl.config.builtin import grid_names, recipe_names, static_recipe_names

ROOT = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # sdist first, then the wheel from it in a clean folder (a --wheel build reuses ./build and would ship
    # files deleted since the last build)
    cmd = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)]
    result = _run(cmd, ROOT, env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (found,) = out.glob("sentcl-*-py3-none-any.whl")
    return found


def test_wheel_holds_the_recipes_and_the_page(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    checkout = {f"sentcl/recipes/{p.name}" for p in (ROOT / "configs").glob("*.yaml")}  # through the link
    for sub in ("experiments", "static"):
        checkout |= {f"sentcl/recipes/{sub}/{p.name}" for p in (ROOT / "configs" / sub).glob("*.yaml")}
    shipped = {n for n in names if n.startswith("sentcl/recipes/") and n.endswith(".yaml")}
    assert len(checkout) > 30 and shipped == checkout  # all of them, and nothing stale
    assert "sentcl/serve/static/index.html" in names


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_trains_a_builtin_recipe(
    wheel: Path, tmp_path: Path, tiny_bert: Path, corpus_file: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            tmp_path,
            dict(os.environ),
        ).stdout.strip()
    )
    (purelib / "dev_libraries.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", str(wheel)]
    result = _run(pip, tmp_path, env)
    assert result.returncode == 0, result.stderr[-3000:]
    outside = tmp_path / "elsewhere"  # no configs/ here: the recipe can only come from the wheel
    outside.mkdir()
    where = _run([str(python), "-c", "import sentcl; print(sentcl.__file__)"], outside, env)
    assert where.stdout.strip().startswith(str(purelib)), where.stdout + where.stderr

    sentcl = str(venv / "bin" / "sentcl")
    result = _run([sentcl, "--help"], outside, env)
    assert result.returncode == 0 and "recipes" in result.stdout, result.stderr[-2000:]
    listing = _run([sentcl, "recipes"], outside, env)
    assert listing.returncode == 0, listing.stderr[-2000:]
    # a name stands two spaces in; a wrapped description continues further in
    listed = {
        line.split()[0] for line in listing.stdout.splitlines() if line[:2] == "  " and line[2:3] != " "
    }
    assert listed == set(recipe_names()) | set(grid_names()) | set(static_recipe_names())
    shown = _run([sentcl, "recipes", "show", "demo"], outside, env)
    assert shown.stdout == (ROOT / "configs" / "demo.yaml").read_text(encoding="utf-8")

    train = [sentcl, "train", "--config", "demo", "--output-dir", str(outside / "run")]
    for key_value in (
        f"model.name_or_path={tiny_bert}",
        f"data.train_file={corpus_file}",
        "training.max_steps=2",
        "training.batch_size=4",
        "training.eval_steps=0",
        "training.progress=false",
        "eval.final_tasks=[]",
        "eval.compare_with_start=false",
    ):
        train += ["--set", key_value]
    result = _run(train, outside, env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert (outside / "run" / "best" / "config.json").is_file()
    assert (outside / "run" / "best" / "sentcl.json").is_file()
