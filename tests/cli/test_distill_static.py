"""``sentcl distill-static``: the recipe distill_static (torch-free loading, listing, errors), the whole path on
the tiny BERT, and the commands that then read the folder (sentence-transformers' own reader among them)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from sentcl.cli import main
from sentcl.config.static_recipe import FitSettings, load_static_recipe
from sentcl.config.typed import ConfigError
from sentcl.methods.static_fit import fit_loss, fit_static
from sentcl.methods.static_student import SUMMARY_FILE
from sentcl.modeling.open import open_model
from sentcl.modeling.postprocess.pca import fit_pca


def _fit(**changes: object) -> FitSettings:
    return dataclasses.replace(load_static_recipe().fit, **changes)


@pytest.fixture(scope="module")
def static_student(tiny_bert: Path, data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("distill_static")
    argv = ["distill-static", str(tiny_bert), str(root / "student"), "--data-dir", str(data_dir)]
    argv += ["--max-sentences", "300", "--steps", "30", "--batch-size", "32", "--dim", "8"]
    assert main([*argv, "--teacher-cache", str(root / "cache"), "--contrastive-weight", "0.5"]) == 0
    return root / "student"


def test_the_command_writes_a_static_folder_with_its_record(static_student: Path) -> None:
    summary = json.loads((static_student / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert summary["corpus_sentences"] == 300 and summary["recipe"]["dim"] == 8
    assert summary["recipe"]["fit"]["contrastive_weight"] == 0.5
    assert {"distill_cpu_seconds", "fit_cpu_seconds", "components_cpu_seconds"} <= set(summary["times"])
    assert summary["removed_components"]["components"] == load_static_recipe().components
    assert open_model(str(static_student)).encode("a man").shape == (8,)


def test_encode_and_search_read_the_folder(static_student: Path, tmp_path: Path, capsys) -> None:
    lines = ["a man plays the guitar", "the dog runs", "stock price rises"]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["encode", "--model", str(static_student), "--input", str(tmp_path / "in.txt")]
    assert main([*argv, "--output", str(tmp_path / "out.npy")]) == 0
    np.testing.assert_allclose(
        np.load(tmp_path / "out.npy"), open_model(str(static_student)).encode(lines), atol=1e-6
    )
    argv = ["search", "--model", str(static_student), "--corpus", str(tmp_path / "in.txt")]
    assert main([*argv, "--query", "the dog runs", "-k", "1", "--json"]) == 0
    assert "the dog runs" in capsys.readouterr().out


def test_a_used_output_folder_is_refused_and_kept(tiny_bert: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("x", encoding="utf-8")
    assert (
        main(["distill-static", str(tiny_bert), str(tmp_path / "out"), "--no-fit", "--weighting", "zipf"])
        == 2
    )
    assert "holds files sentcl did not write (mine.txt)" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["mine.txt"]


def test_the_fit_moves_the_table_toward_the_teacher_and_folds_its_map() -> None:
    rng = np.random.default_rng(0)
    vocab, dim, n = 40, 4, 400
    truth = rng.normal(size=(vocab, 6))  # the "teacher": a mean of hidden token vectors, 6 wide
    tokens = [rng.integers(0, vocab, size=rng.integers(1, 6)).tolist() for _ in range(n)]
    teacher = np.array([truth[ids].mean(axis=0) for ids in tokens])  # (N, 6)
    pca = fit_pca(teacher, dim)
    start = rng.normal(size=(vocab, dim)).astype(np.float32)
    target = pca.apply(teacher)

    def mean_cos(table: np.ndarray) -> float:
        s = np.array([table[ids].mean(axis=0) for ids in tokens])  # a hand loop of the folded table
        return float(
            np.mean(np.sum(s * target, 1) / np.linalg.norm(s, axis=1) / np.linalg.norm(target, axis=1))
        )

    result = fit_static(
        start, pca, tokens, teacher, _fit(steps=300, batch_size=64, learning_rate=0.05, warmup_steps=20)
    )
    assert mean_cos(result.table) > max(0.9, mean_cos(start) + 0.3)
    assert result.losses[-1][1] < result.losses[0][1]


def test_the_contrastive_term_is_infonce_by_hand() -> None:
    rng = np.random.default_rng(1)
    s, t = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    settings = _fit(contrastive_weight=2.0, temperature=0.1)
    got = float(fit_loss(torch.tensor(s), torch.tensor(t), settings))
    sn = s / np.linalg.norm(s, axis=1, keepdims=True)
    tn = t / np.linalg.norm(t, axis=1, keepdims=True)
    logits = sn @ tn.T / 0.1
    nce = np.mean(np.log(np.exp(logits).sum(1)) - np.diag(logits))
    assert got == pytest.approx(np.mean(1 - np.sum(sn * tn, 1)) + 2.0 * nce, rel=1e-6)


def test_index_and_serve_run_on_the_folder(static_student: Path, tmp_path: Path) -> None:
    """sentcl encode --shard-size then sentcl index build; the service through real uvicorn and the openai
    client gives the folder's own vectors."""
    import sys

    import openai

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
    from serve_helpers import running_server

    from sentcl.serve.app import create_app

    lines = [f"the {w} runs in the garden" for w in "dog cat man woman child horse bird".split()]
    (tmp_path / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = ["encode", "--model", str(static_student), "--input", str(tmp_path / "corpus.txt")]
    assert main([*argv, "--output", str(tmp_path / "shards"), "--shard-size", "4"]) == 0
    assert main(["index", "build", "--embeddings", str(tmp_path / "shards"), "--type", "flat"]) == 0
    model = open_model(str(static_student))
    with running_server(create_app(model, model_name="static")) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=20)
        got = [d.embedding for d in client.embeddings.create(input=lines[:3], model="static").data]
    want = model.encode(lines[:3])
    np.testing.assert_allclose(got, want / np.linalg.norm(want, axis=1, keepdims=True), atol=1e-5)


def test_the_recipe_loads_without_torch_and_is_listed(capsys) -> None:
    code = (
        "import sys; from sentcl.config.static_recipe import load_static_recipe; "
        "r = load_static_recipe('distill_static', ['dim=128']); "
        "print(r.dim, r.fit.steps > 0, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["128", "True", "False"]
    assert main(["recipes"]) == 0
    assert "sentcl distill-static --config NAME" in capsys.readouterr().out
    assert main(["recipes", "show", "distill_static"]) == 0
    assert capsys.readouterr().out.startswith("# Distil any teacher into a static model")


def test_recipe_errors_name_the_key_and_where_it_came_from(tmp_path: Path, capsys) -> None:
    with pytest.raises(ConfigError, match=r"fit\.stepz.*from --set fit\.stepz"):
        load_static_recipe(None, ["fit.stepz=3"])
    mine = tmp_path / "mine.yaml"
    mine.write_text("dim: 64\nfit:\n  loss: hinge\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"fit\.loss must be one of.*{mine.name}"):
        load_static_recipe(mine)
    mine.write_text("dim: 64\ncomponents: 64\n", encoding="utf-8")  # as many directions as the width
    with pytest.raises(
        ConfigError, match=rf"components must be from 0 to dim - 1 \(63\), got 64 .*{mine.name}"
    ):
        load_static_recipe(mine)
    mine.write_text("dim: 64\n", encoding="utf-8")  # a user's file changes some settings, the rest stand
    assert load_static_recipe(mine).dim == 64
    assert load_static_recipe(mine).fit == load_static_recipe().fit
    assert main(["train", "--config", "distill_static"]) == 2
    assert "sentcl distill-static --config distill_static" in capsys.readouterr().err


def test_the_recipe_runs_and_sentence_transformers_reads_its_folder(
    tiny_bert: Path, data_dir: Path, tmp_path: Path
) -> None:
    """The built-in recipe with a tiny teacher and a few sentences, a wider PCA narrowed by the fit's map."""
    from sentence_transformers import SentenceTransformer

    sets = [f"teacher={tiny_bert}", f"output_dir={tmp_path / 'student'}", "max_sentences=200", "dim=6"]
    sets += ["pca_dim=12", "fit.steps=20", "fit.batch_size=32", f"teacher_cache={tmp_path / 'cache'}"]
    argv = ["distill-static", "--config", "distill_static", "--data-dir", str(data_dir)]
    assert main([*argv, *(x for s in sets for x in ("--set", s))]) == 0
    summary = json.loads((tmp_path / "student" / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert summary["recipe"]["pca_dim"] == 12 and summary["corpus_sentences"] == 200
    assert list((tmp_path / "cache").iterdir())  # the teacher's vectors went to the teacher cache
    lines = ["a man plays the guitar", "The dog runs!", "", "zz qq 42"]
    ours = open_model(str(tmp_path / "student")).encode(lines)
    theirs = SentenceTransformer(str(tmp_path / "student"), device="cpu").encode(lines, convert_to_numpy=True)
    assert ours.shape == (4, 6)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_the_weighted_recipe_writes_its_form_with_the_components_folded_in(
    tiny_bert: Path, data_dir: Path, tmp_path: Path
) -> None:
    """distill_static_weighted on the tiny teacher: the folder holds the weighted form, and the corpus' own
    vectors through it have the common components removed (mean 0, and 3 of the 6 directions empty)."""
    sets = [f"teacher={tiny_bert}", f"output_dir={tmp_path / 'student'}", "max_sentences=300", "dim=6"]
    sets += ["fit.steps=30", "fit.batch_size=32", "attention_heads=2", "attention_dim=4"]
    argv = ["distill-static", "--config", "distill_static_weighted", "--data-dir", str(data_dir)]
    argv += ["--teacher-cache", str(tmp_path / "cache")]
    assert main([*argv, *(x for s in sets for x in ("--set", s))]) == 0
    summary = json.loads((tmp_path / "student" / SUMMARY_FILE).read_text(encoding="utf-8"))
    assert summary["recipe"]["head"] == "weights" and summary["removed_components"]["components"] == 3
    model = open_model(str(tmp_path / "student"))
    assert model.weighted is not None and model.weighted.heads == 2 and model.weighted.qk == 4
    assert float(model.weighted.gain.abs().sum()) > 0  # the fit moved the gains off the plain mean
    from sentcl.methods.static_student import corpus_sentences

    vectors = model.pool(model.tokens.ids(corpus_sentences(data_dir, 300)))
    vectors = vectors[np.abs(vectors).sum(1) > 0]  # (N, 6): texts with a token
    spread = np.linalg.svd(vectors - vectors.mean(0), compute_uv=False)  # (6,) descending
    assert np.abs(vectors.mean(0)).max() < 1e-4 * np.abs(vectors).max()
    assert spread[3:].max() < 1e-4 * spread[0] and spread[2] > 1e-2 * spread[0]


@settings(max_examples=80, deadline=None)
@given(
    dim=st.integers(-3, 600),
    pca=st.one_of(st.none(), st.integers(-3, 600)),
    steps=st.integers(-2, 4000),
    components=st.integers(-2, 8),
    head=st.sampled_from(["mean", "weights", "max"]),
    heads=st.integers(-1, 5),
)
def test_any_override_is_taken_or_refused_by_name(
    dim: int, pca: int | None, steps: int, components: int, head: str, heads: int
) -> None:
    """Generated settings: valid ones land in the recipe as given, the rest are ConfigErrors naming a key."""
    sets = [f"dim={dim}", f"fit.steps={steps}", f"pca_dim={'null' if pca is None else pca}"]
    sets += [f"components={components}", f"head={head}", f"attention_heads={heads}"]
    valid = dim > 0 and steps >= 0 and (pca is None or (pca >= dim and (steps > 0 or pca == dim)))
    valid = valid and 0 <= components < dim
    valid = valid and head != "max" and heads > 0 and (head == "mean" or steps > 0)
    if not valid:
        with pytest.raises(ConfigError, match=r"dim|steps|components|head"):
            load_static_recipe(None, sets)
        return
    recipe = load_static_recipe(None, sets)
    assert (recipe.dim, recipe.pca_dim, recipe.fit.steps, recipe.fitted) == (dim, pca, steps, steps > 0)
    assert (recipe.components, recipe.head, recipe.attention_heads) == (components, head, heads)
    assert recipe.fit.batch_size == load_static_recipe().fit.batch_size  # the rest: the built-in values
