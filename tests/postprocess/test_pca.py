"""PCA as a Dense layer: ``fit_pca`` against scikit-learn's PCA and numpy's SVD; ``sentcl postprocess pca``
gives, through ``sentcl encode`` and through sentence-transformers, normalise(scikit-learn's transform of the
start model's unnormalised vectors) and prints the variance kept; ``model.output_dim`` starts from the same PCA."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.data import write_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from modeling.modeling_folders import st_encode, st_folder
from sklearn.decomposition import PCA as SkPCA

from sentcl.cli import main
from sentcl.config import ModelConfig
from sentcl.modeling import SentenceEncoder
from sentcl.modeling.build import build_encoder
from sentcl.modeling.postprocess.pca import fit_pca


def _aligned(ours: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``ref``'s columns with the sign that matches ``ours`` (a principal direction's sign is arbitrary)."""
    return ref * np.sign((ours * ref).sum(axis=0))


def test_fit_pca_against_sklearn_and_svd() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 12)) @ rng.normal(size=(12, 12)) + rng.normal(size=12) * 3  # (N, D)
    pca = fit_pca(x, 5)
    ref = SkPCA(n_components=5, svd_solver="full").fit(x)
    np.testing.assert_allclose(np.abs(pca.components), np.abs(ref.components_), atol=1e-10)
    np.testing.assert_allclose(pca.explained_variance, ref.explained_variance_, rtol=1e-10)
    np.testing.assert_allclose(pca.explained_variance_ratio, ref.explained_variance_ratio_, rtol=1e-10)
    np.testing.assert_allclose(pca.apply(x), _aligned(pca.apply(x), ref.transform(x)), atol=1e-9)
    # numpy: the eigenvectors of the covariance matrix, largest eigenvalues first
    lam, u = np.linalg.eigh(np.cov(x, rowvar=False))
    np.testing.assert_allclose(pca.explained_variance, lam[::-1][:5], rtol=1e-9)
    np.testing.assert_allclose(np.abs(pca.components), np.abs(u[:, ::-1][:, :5].T), atol=1e-8)
    # the Dense module computes the same map; without centring the bias is zero
    dense = pca.as_dense()  # float32 weights
    got = dense(torch.from_numpy(x).float()).detach().numpy()
    np.testing.assert_allclose(got, pca.apply(x), atol=1e-4)
    plain = fit_pca(x, 5, center=False)
    np.testing.assert_allclose(plain.apply(x), x @ pca.components.T, atol=1e-9)


def test_fit_pca_errors() -> None:
    x = np.ones((4, 6))
    with pytest.raises(ValueError, match="between 1 and the embedding size 6"):
        fit_pca(x, 7)
    with pytest.raises(ValueError, match="needs more than 4 sentences, got 4"):
        fit_pca(x, 4, "fit.txt")
    with pytest.raises(ValueError, match="fit.txt: the sentence vectors hold NaN"):
        fit_pca(np.full((9, 6), np.nan), 2, "fit.txt")


@pytest.fixture(scope="module")
def st_tiny(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers folder: mean pooling, then Normalize (as all-MiniLM-L6-v2)."""
    return st_folder(tmp_path_factory.mktemp("st_tiny") / "st", tiny_bert, "mean", [], normalize=True)


def test_pca_command(st_tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit = write_corpus(tmp_path / "fit.txt", 120, seed=4)
    out = tmp_path / "pca"
    argv = ["postprocess", "pca", "--model", str(st_tiny), "--fit-file", str(fit), "--dim", "8"]
    assert main([*argv, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    lines = fit.read_text().splitlines()
    start = SentenceEncoder.from_pretrained(str(st_tiny))
    start.normalize_output = False
    raw = start.encode(lines).astype(np.float64)  # (N, 32): before the Normalize module
    ref = SkPCA(n_components=8, svd_solver="full").fit(raw)
    kept = float(re.search(r"keep ([\d.]+)% of the variance", printed)[1])  # type: ignore[index]
    assert kept == pytest.approx(100 * ref.explained_variance_ratio_.sum(), abs=0.006)
    expected = ref.transform(raw)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)  # Normalize after the PCA

    assert (
        main(["encode", "--model", str(out), "--input", str(fit), "--output", str(tmp_path / "e.npy")]) == 0
    )
    ours = np.load(tmp_path / "e.npy").astype(np.float64)
    assert ours.shape == (120, 8)
    np.testing.assert_allclose(ours, _aligned(ours, expected), atol=2e-4)
    np.testing.assert_allclose(st_encode(out, lines), ours, atol=1e-5)  # an ordinary ST folder
    modules = [m["type"].rsplit(".", 1)[-1] for m in json.loads((out / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Dense", "Normalize"]
    meta = json.loads((out / "sentcl.json").read_text())["postprocess"]
    assert meta["method"] == "pca" and meta["dim"] == 8 and meta["center"] is True


def test_pca_command_errors(tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fit = write_corpus(tmp_path / "fit.txt", 20)
    base = ["postprocess", "pca", "--model", str(tiny_bert), "--pooler", "avg", "--fit-file", str(fit)]
    assert main([*base, "--output", str(tmp_path / "a")]) == 2
    assert "pca needs --dim" in capsys.readouterr().err
    assert main([*base, "--output", str(tmp_path / "b"), "--dim", "30"]) == 2
    assert "needs more than 30 sentences, got 20" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    white = ["postprocess", "whitening", "--model", str(tiny_bert), "--pooler", "avg", "--fit-file", str(fit)]
    assert main([*white, "--output", str(tmp_path / "c"), "--no-center"]) == 2
    assert "--no-center applies to pca" in capsys.readouterr().err


def test_output_dim_starts_from_pca(st_tiny: Path, tmp_path: Path) -> None:
    sentences = write_corpus(tmp_path / "fit.txt", 60, seed=2).read_text().splitlines()
    cfg = ModelConfig(name_or_path=str(st_tiny), output_dim=6)
    model = build_encoder(cfg, sentences)
    assert isinstance(model, SentenceEncoder)
    start = SentenceEncoder.from_pretrained(str(st_tiny))
    start.normalize_output = False
    ref = SkPCA(n_components=6, svd_solver="full").fit(start.encode(sentences).astype(np.float64))
    weight = model.dense[-1].linear.weight.detach().numpy()  # (6, 32)
    np.testing.assert_allclose(np.abs(weight), np.abs(ref.components_), atol=1e-5)
    assert model.dense[-1].linear.weight.requires_grad
    assert model.embedding_dim == 6 and model.normalize_output
    folder = tmp_path / "student"
    model.save_pretrained(folder)
    ours = SentenceEncoder.from_pretrained(str(folder)).encode(sentences)
    np.testing.assert_allclose(st_encode(folder, sentences), ours, atol=1e-5)
    random_start = build_encoder(
        ModelConfig(name_or_path=str(st_tiny), output_dim=6, output_dim_init="random")
    )
    assert random_start.dense[-1].linear.weight.shape == (6, 32)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="needs sentences to fit on"):
        build_encoder(cfg)


def test_pca_of_one_repeated_sentence_is_refused_pp_pca_const() -> None:
    """Reliability row PP_pca_const: 50 copies of one vector gave the identity's first rows, 'keeps 0.00%'."""
    with pytest.raises(
        ValueError, match="fit.txt: the sentence vectors \\(50 sentences\\) vary in no direction"
    ):
        fit_pca(np.tile(np.arange(8.0), (50, 1)), 4, "fit.txt")


def test_pca_beyond_the_rank_is_refused_naming_it_pp_pca_rankdef() -> None:
    """Reliability row PP_pca_rankdef: --dim 8 on 3 distinct sentences (rank 2) kept 6 directions of noise."""
    rng = np.random.default_rng(1)
    three = rng.normal(size=(3, 16))
    x = three[np.arange(21) % 3]  # (21, 16): rank 2 once centred
    assert np.linalg.matrix_rank(x - x.mean(axis=0)) == 2
    with pytest.raises(
        ValueError, match="vary in only 2 of 16 directions, so 6 of the 8 .* set --dim to 2 or less"
    ):
        fit_pca(x, 8)
    assert fit_pca(x, 2).components.shape == (2, 16)


def test_a_pca_error_names_the_callers_setting() -> None:
    """fit_pca's errors name the setting its caller took the width from, not the postprocess command's --dim."""
    x = np.random.default_rng(2).normal(size=(3, 16))[np.arange(21) % 3]  # (21, 16): rank 2 once centred
    with pytest.raises(ValueError, match="set pca_dim to 2 or less$"):
        fit_pca(x, 8, option="pca_dim")
    with pytest.raises(
        ValueError, match="^model.output_dim must be between 1 and the embedding size 16, got 17"
    ):
        fit_pca(x, 17, option="model.output_dim")


@settings(max_examples=60, deadline=None)
@given(rank=st.integers(0, 6), dim=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_pca_fits_exactly_up_to_numpys_rank(rank: int, dim: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(40, rank)) @ rng.normal(size=(rank, 8)) + rng.normal(size=8)  # (40, 8), rank `rank`
    true_rank = np.linalg.matrix_rank(x - x.mean(axis=0))  # numpy's own tolerance: the independent reference
    if dim <= true_rank:
        assert fit_pca(x, dim).components.shape == (dim, 8)
    else:
        with pytest.raises(ValueError, match="numerical noise"):
            fit_pca(x, dim)
