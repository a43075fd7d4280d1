"""Static models (modeling/static.py, methods/static_distill.py): the folder, its encode against numpy and
sentence-transformers' own reader, and Model2Vec's distillation against a hand computation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer, BertModel

from sentcl.methods.static_distill import (
    corpus_probabilities,
    distill_table,
    sif_weights,
    zipf_probabilities,
)
from sentcl.modeling.locate import locate
from sentcl.modeling.open import open_model
from sentcl.modeling.static import StaticEncoder, bag_mean, save_static

SENTENCES = ["a man plays the guitar", "the dog runs in the garden", "Stock price rises!", "", "zz qq"]


def _rust(tiny_bert: Path):  # noqa: ANN202 - a tokenizers.Tokenizer
    return AutoTokenizer.from_pretrained(str(tiny_bert)).backend_tokenizer


def _random_static(tiny_bert: Path, folder: Path, dim: int = 8, seed: int = 0) -> np.ndarray:
    rust = _rust(tiny_bert)
    table = np.random.default_rng(seed).normal(size=(rust.get_vocab_size(), dim)).astype(np.float32)
    save_static(folder, rust, table, normalize=True)
    return table


def _numpy_reference(tokenizer, table: np.ndarray, sentences: list[str]) -> np.ndarray:  # noqa: ANN001
    """Tokenise without specials, look up rows, mean, normalise: a hand loop."""
    out = []
    for sentence in sentences:
        ids = tokenizer(sentence, add_special_tokens=False)["input_ids"]
        v = np.zeros(table.shape[1]) if not ids else np.mean([table[i] for i in ids], axis=0)
        n = np.linalg.norm(v)
        out.append(v / n if n > 0 else v)
    return np.array(out)


@given(
    lengths=st.lists(st.integers(0, 6), min_size=1, max_size=8),
    seed=st.integers(0, 2**16),
)
def test_bag_mean_is_the_mean_of_the_rows(lengths: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(11, 3)).astype(np.float32)
    ids = [rng.integers(0, 11, size=n).tolist() for n in lengths]
    want = np.array([table[row].mean(axis=0) if row else np.zeros(3) for row in ids])
    np.testing.assert_allclose(bag_mean(table, ids), want, rtol=1e-5, atol=1e-6)


def test_a_static_folder_opens_and_encodes_as_numpy_does(tiny_bert: Path, tmp_path: Path) -> None:
    table = _random_static(tiny_bert, tmp_path / "static")
    assert locate(str(tmp_path / "static")).kind == "static"
    model = open_model(str(tmp_path / "static"))
    assert isinstance(model, StaticEncoder) and model.embedding_dim == 8
    want = _numpy_reference(AutoTokenizer.from_pretrained(str(tiny_bert)), table, SENTENCES)
    np.testing.assert_allclose(model.encode(SENTENCES), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.encode(SENTENCES[0]), want[0], rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sentences=st.lists(st.text(alphabet="abcdeghilmnoprstuy .,!'Z", max_size=40), min_size=1, max_size=6))
def test_sentence_transformers_reads_the_folder_as_sentcl_encodes_it(
    static_folder: Path, sentences: list[str]
) -> None:
    from sentence_transformers import SentenceTransformer

    theirs = SentenceTransformer(str(static_folder), device="cpu").encode(sentences, convert_to_numpy=True)
    ours = open_model(str(static_folder)).encode(sentences)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def static_folder(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("st") / "static"
    _random_static(tiny_bert, folder, dim=6, seed=3)
    return folder


def test_save_refuses_a_folder_with_the_users_files(tiny_bert: Path, tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(ValueError, match=r"holds files sentcl did not write \(notes\.txt\)"):
        _random_static(tiny_bert, tmp_path / "mine")
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]


def test_options_that_do_not_apply_are_refused(static_folder: Path) -> None:
    with pytest.raises(ValueError, match="--int8 does not apply"):
        open_model(str(static_folder), int8=True)


def test_a_damaged_table_names_the_file(tiny_bert: Path, tmp_path: Path) -> None:
    _random_static(tiny_bert, tmp_path / "static")
    (tmp_path / "static" / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(Exception, match=r"model\.safetensors"):
        open_model(str(tmp_path / "static"))


def _hand_distilled(tiny_bert: Path, dim: int, weights: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Model2Vec's recipe by hand: transformers' BertModel on [CLS] t [SEP], mean of the three states, numpy
    SVD of the centred vectors, rows times weights."""
    tok = AutoTokenizer.from_pretrained(str(tiny_bert))
    bert = BertModel.from_pretrained(str(tiny_bert)).eval()
    ids = list(range(len(tok)))
    with torch.no_grad():
        framed = torch.tensor([[tok.cls_token_id, i, tok.sep_token_id] for i in ids])
        vectors = bert(input_ids=framed).last_hidden_state.mean(dim=1).numpy().astype(np.float64)  # (V, H)
    centred = vectors - vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return (centred @ vt[:dim].T) * weights[:, None], ids  # (V, k)


def test_distillation_matches_a_hand_computation(tiny_bert: Path, tmp_path: Path) -> None:
    encoder = open_model(str(tiny_bert), pooler="avg")
    weights = sif_weights(zipf_probabilities(len(encoder.tokenizer)), 1e-2)
    ours = distill_table(encoder, 6, weights)
    hand, _ = _hand_distilled(tiny_bert, 6, weights)
    # PCA's axes are defined up to sign: compare |coordinates| and the sentence cosines, which signs keep
    np.testing.assert_allclose(np.abs(ours.table), np.abs(hand), rtol=1e-3, atol=1e-4)
    save_static(tmp_path / "s", encoder.tokenizer.backend_tokenizer, ours.table)
    got = open_model(str(tmp_path / "s")).encode(SENTENCES[:3])
    want = _numpy_reference(encoder.tokenizer, hand, SENTENCES[:3])
    np.testing.assert_allclose(got @ got.T, want @ want.T, rtol=1e-4, atol=1e-5)


def test_sif_weights_follow_arora_et_al() -> None:
    p = corpus_probabilities([[0, 1, 1], [1, 2]], 4)  # counts 1+1, 1+3, 1+1, 1+0 over 9
    np.testing.assert_allclose(p, [2 / 9, 4 / 9, 2 / 9, 1 / 9])
    np.testing.assert_allclose(sif_weights(p, 0.1), 0.1 / (0.1 + p))
    z = zipf_probabilities(3)
    np.testing.assert_allclose(z, np.array([1, 1 / 2, 1 / 3]) / (11 / 6))
