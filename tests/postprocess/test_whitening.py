"""Whitening (Su et al. 2021) against the formula written out in numpy, stored with the model, and read back
by the real sentence-transformers as a Dense module with identity activation."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.data import write_corpus

from sentcl.modeling import SentenceEncoder
from sentcl.modeling.postprocess.whitening import fit_whitening
from sentcl.postprocess.fit import PostprocessSettings, postprocess_model, read_fit_sentences

SENTENCES = ["a man is playing a guitar", "the stock price falls", "a", "the dog runs in the garden"]


def numpy_whitening(x: np.ndarray, k: int) -> np.ndarray:
    """x̃ = (x − μ) U Λ^(-1/2), first k columns, with Σ = U Λ Uᵀ from an eigendecomposition (not an SVD)."""
    mu = x.mean(axis=0)
    sigma = (x - mu).T @ (x - mu) / (len(x) - 1)
    lam, u = np.linalg.eigh(sigma)  # increasing
    lam, u = lam[::-1], u[:, ::-1]
    return ((x - mu) @ u / np.sqrt(lam))[:, :k]


def correlated(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) @ rng.normal(size=(d, d)) + rng.normal(size=d) * 3


@pytest.mark.parametrize("k", [6, 3])
def test_whitening_equals_the_numpy_formula(k: int) -> None:
    x = correlated(300, 6)
    ours = fit_whitening(x, None if k == 6 else k).apply(x)
    ref = numpy_whitening(x, k)
    signs = np.sign((ours * ref).sum(axis=0))  # an eigenvector is defined up to its sign
    np.testing.assert_allclose(ours, ref * signs, atol=1e-8)
    np.testing.assert_allclose(np.cov(ours, rowvar=False), np.eye(k), atol=1e-8)
    np.testing.assert_allclose(ours.mean(axis=0), 0, atol=1e-8)


def test_dense_layer_computes_the_same_map() -> None:
    x = correlated(100, 5, seed=1)
    whitening = fit_whitening(x, 4)
    layer = whitening.as_dense()
    assert layer.activation == "identity" and tuple(layer.linear.weight.shape) == (4, 5)
    out = layer(torch.as_tensor(x, dtype=torch.float32)).detach().numpy()
    np.testing.assert_allclose(out, whitening.apply(x), atol=1e-4)


def test_too_few_sentences_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"span only 4 of 6 directions \(5 sentences\).*--dim 4"):
        fit_whitening(correlated(5, 6), 5, where="fit.txt")
    assert fit_whitening(correlated(5, 6)).weight.shape == (6, 4)  # no dim: the 4 directions that vary


@pytest.fixture()
def fit_file(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "fit.txt", 120, seed=3)


def test_model_output_is_white_on_the_fit_data_and_survives_saving(
    tiny_bert: Path, fit_file: Path, tmp_path: Path
) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    sentences = read_fit_sentences([fit_file])
    raw = model.encode(sentences).astype(np.float64)  # (N, 32)
    # the random BERT's LayerNorm (gain 1, bias 0) puts every token state, so their mean, in the hyperplane of
    # zero-sum vectors: 31 directions; whitening to 32 is refused, and with no --dim it keeps the 31
    with pytest.raises(ValueError, match="span only 31 of 32 directions"):
        postprocess_model(model, PostprocessSettings("whitening", dim=32), [fit_file])
    postprocess_model(model, PostprocessSettings("whitening"), [fit_file])
    assert model.postprocess is not None and model.postprocess["dim"] == 31
    white = model.encode(sentences).astype(np.float64)
    np.testing.assert_allclose(np.cov(white, rowvar=False), np.eye(31), atol=2e-3)
    signs = np.sign((white * numpy_whitening(raw, 31)).sum(axis=0))
    np.testing.assert_allclose(white, numpy_whitening(raw, 31) * signs, atol=2e-3)

    folder = tmp_path / "white"
    model.save_pretrained(folder)
    meta = json.loads((folder / "sentcl.json").read_text())
    assert meta["postprocess"]["method"] == "whitening" and meta["postprocess"]["sentences"] == 120
    again = SentenceEncoder.from_pretrained(str(folder))
    np.testing.assert_array_equal(again.encode(SENTENCES), model.encode(SENTENCES))
    with pytest.raises(ValueError, match="already post-processed"):
        postprocess_model(again, PostprocessSettings("whitening"), [fit_file])


def test_sentence_transformers_loads_the_whitened_folder(
    tiny_bert: Path, fit_file: Path, tmp_path: Path
) -> None:
    """An ST folder with Normalize (as all-MiniLM-L6-v2): whitening goes before Normalize, in both libraries."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from sentence_transformers import SentenceTransformer, models

        transformer = models.Transformer(str(tiny_bert), max_seq_length=48)
        modules = [transformer, models.Pooling(32, pooling_mode="mean"), models.Normalize()]
        SentenceTransformer(modules=modules, device="cpu").save(str(tmp_path / "st"))
    model = SentenceEncoder.from_pretrained(str(tmp_path / "st"))
    assert model.normalize_output
    postprocess_model(model, PostprocessSettings("whitening", dim=16), [fit_file])
    folder = tmp_path / "white"
    model.save_pretrained(folder)
    kinds = [m["type"].rsplit(".", 1)[-1] for m in json.loads((folder / "modules.json").read_text())]
    assert kinds == ["Transformer", "Pooling", "Dense", "Normalize"]
    dense = json.loads((folder / "2_Dense" / "config.json").read_text())
    assert dense["activation_function"] == "torch.nn.modules.linear.Identity"
    assert (dense["in_features"], dense["out_features"]) == (32, 16)
    st = SentenceTransformer(str(folder), device="cpu").encode(SENTENCES, convert_to_numpy=True)
    ours = SentenceEncoder.from_pretrained(str(folder)).encode(SENTENCES)
    assert st.shape == (4, 16)
    np.testing.assert_allclose(st, ours, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(st, axis=1), 1, atol=1e-5)


def test_csv_fit_file_takes_every_field_and_names_a_bad_line(tmp_path: Path) -> None:
    good = tmp_path / "nli.csv"
    good.write_text("sent0,sent1,hard_neg\na b,c d,e f\n\ng h,i j,k l\n", encoding="utf-8")
    assert read_fit_sentences([good]) == ["a b", "c d", "e f", "g h", "i j", "k l"]
    bad = tmp_path / "bad.csv"
    bad.write_text("sent0,sent1,hard_neg\na b,c d,e f\ng h,i j\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.csv:3: 2 fields, the header has 3"):
        read_fit_sentences([bad])
