"""The weighted static form (modeling/static_weighted.py, methods/static_weights.py): the trained head against its
tables, both against a hand-written numpy loop, the components folded into the rows against removing them after,
and the folder read by sentcl and by sentence-transformers' own reader, with damaged files named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import load_file, save_file
from transformers import AutoTokenizer

from sentcl.files.paths import ModelFolderError
from sentcl.methods.static_components import common_components, remove_components
from sentcl.methods.static_weights import WeightsHead
from sentcl.modeling import static_weighted
from sentcl.modeling.open import open_model
from sentcl.modeling.static import save_static
from sentcl.modeling.static_tokens import TokenRows
from sentcl.modeling.static_weighted import WEIGHTED_FILE, WeightedMean

SENTENCES = ["a man plays the guitar", "the dog runs in the garden", "Stock price rises!", "", "zz qq"]


def trained_like(seed: int, vocab: int = 40, width: int = 16, out: int = 8) -> WeightsHead:
    """A weights head with every parameter moved off its start (its gains no longer zero)."""
    torch.manual_seed(seed)
    table = np.random.default_rng(seed).normal(size=(vocab, width)).astype(np.float32)  # (V, k)
    model = WeightsHead(table, out, heads=2, qk=4)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def numpy_weighted(model: WeightsHead, ids: list[int]) -> np.ndarray:
    """A hand-written loop: w_j = 1/T + sum_h g_h mean_i softmax_j(q_hi . k_hj / sqrt(d)), then L sum_j w_j x_j."""
    with torch.no_grad():
        x_all = model.mean.weight.numpy()  # (V, k)
        qk = model.qk(model.norm(model.mean.weight)).numpy()  # (V, 2 H d)
        gain, mapping = model.gain.numpy(), model.linear.weight.numpy()  # (H,), (k', k)
    heads, d, t = model.heads, model.qk_width, len(ids)
    weights = np.full(t, 1.0 / t)
    for h in range(heads):
        q = qk[ids, h * d : (h + 1) * d]  # (T, d)
        k = qk[ids, heads * d + h * d : heads * d + (h + 1) * d]  # (T, d)
        scores = q @ k.T / np.sqrt(d)  # (T, T)
        soft = np.exp(scores - scores.max(axis=1, keepdims=True))
        soft /= soft.sum(axis=1, keepdims=True)
        weights += gain[h] * soft.mean(axis=0)
    return mapping @ (weights @ x_all[ids])  # (k',)


def test_the_head_starts_as_the_recipes_mean_of_rows() -> None:
    table = np.random.default_rng(0).normal(size=(50, 8)).astype(np.float32)  # (V, k)
    model = WeightsHead(table, 6, heads=4, qk=2)
    lists = [[1, 2, 3], [4], [5, 5, 9, 10]]
    rows = TokenRows.of(lists)
    with torch.no_grad():
        got = model(torch.from_numpy(rows.ids), torch.from_numpy(rows.offsets)).numpy()  # (3, 6)
    expected = np.stack([table[ids].mean(axis=0)[:6] for ids in lists])  # the first 6 PCA axes
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    lists=st.lists(st.lists(st.integers(0, 39), max_size=9), min_size=1, max_size=7), seed=st.integers(0, 99)
)
def test_the_tables_give_the_padded_heads_outputs_and_the_hand_loops(
    lists: list[list[int]], seed: int
) -> None:
    model = trained_like(seed)
    rows = TokenRows.of(lists)
    with torch.no_grad():
        padded = model(torch.from_numpy(rows.ids), torch.from_numpy(rows.offsets)).numpy()  # (N, 8)
    got = model.tables()(rows)
    np.testing.assert_allclose(got, padded, rtol=1e-4, atol=1e-5)
    for ids, vector in zip(lists, got, strict=True):
        want = numpy_weighted(model, ids) if ids else np.zeros(8)  # an empty text gives zeros
        np.testing.assert_allclose(vector, want, rtol=1e-4, atol=1e-5)


def test_long_texts_are_scored_in_chunks_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    model = trained_like(5)
    rows = TokenRows.of([list(np.random.default_rng(1).integers(0, 40, size=300)), [3, 4], [7] * 300])
    whole = model.tables()(rows)
    monkeypatch.setattr(static_weighted, "SCORE_FLOATS", 1000)  # one query row, one text a block
    np.testing.assert_allclose(model.tables()(rows), whole, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(whole[1], numpy_weighted(model, [3, 4]), rtol=1e-4, atol=1e-5)


def test_the_components_fold_into_the_rows_exactly() -> None:
    """Removing the corpus' mean and top directions after the weighted mean equals the mean over rows with
    them folded in: the weights sum to 1 + sum_h g_h for every text."""
    tables = trained_like(6).tables()
    rng = np.random.default_rng(2)
    lists = [rng.integers(0, 40, size=int(n)).tolist() for n in rng.integers(1, 12, size=200)]
    found = common_components(tables, lists, 2)
    after = remove_components(tables(TokenRows.of(lists)), found)  # each output, then removed
    folded = tables.with_table(remove_components(tables.table, found, tables.total_weight))
    np.testing.assert_allclose(folded(TokenRows.of(lists)), after, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="weights sum to"):
        remove_components(tables.table, found, 1e-5)


@pytest.fixture()
def weighted_folder(tiny_bert: Path, tmp_path: Path) -> tuple[Path, WeightedMean]:
    rust = AutoTokenizer.from_pretrained(str(tiny_bert)).backend_tokenizer
    tables = trained_like(7, vocab=rust.get_vocab_size(), width=12, out=8).tables()
    return save_static(tmp_path / "weighted", rust, tables.table, weighted=tables), tables


def test_the_folder_opens_and_encodes_as_its_tables(weighted_folder: tuple[Path, WeightedMean]) -> None:
    folder, tables = weighted_folder
    model = open_model(str(folder))
    assert model.weighted is not None and model.embedding_dim == 8
    rows = model.tokens.ids(SENTENCES)
    want = tables(rows)
    want = want / np.maximum(np.linalg.norm(want, axis=1, keepdims=True), 1e-12)
    np.testing.assert_allclose(model.encode(SENTENCES), want, rtol=1e-5, atol=1e-6)
    assert not model.encode([""]).any()
    many = SENTENCES * 900  # more than one pass of POOL_TEXTS: the same vectors, in order, whatever the batch
    np.testing.assert_allclose(
        model.encode(many, batch_size=1), np.tile(model.encode(SENTENCES), (900, 1)), atol=1e-6
    )
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    assert modules[0]["type"] == "sentcl.interop.st_weighted.WeightedStaticEmbedding"


def test_sentence_transformers_reads_the_weighted_form(
    weighted_folder: tuple[Path, WeightedMean], tmp_path: Path
) -> None:
    """sentence-transformers' own loader imports sentcl's module (it asks for trust_remote_code, as for any module
    outside its own package): the weighted mean, not a plain one; its save writes a folder sentcl reads the same."""
    from sentence_transformers import SentenceTransformer

    folder, _ = weighted_folder
    ours = open_model(str(folder)).encode(SENTENCES)
    with pytest.raises(ValueError, match="trust_remote_code"):  # never silently a plain mean of the table
        SentenceTransformer(str(folder), device="cpu")
    theirs = SentenceTransformer(str(folder), device="cpu", trust_remote_code=True)
    np.testing.assert_allclose(theirs.encode(SENTENCES, convert_to_numpy=True), ours, rtol=1e-5, atol=1e-6)
    theirs.save(str(tmp_path / "saved"))
    np.testing.assert_allclose(
        open_model(str(tmp_path / "saved")).encode(SENTENCES), ours, rtol=1e-5, atol=1e-6
    )


def _damage(folder: Path, **tensors: np.ndarray | None) -> None:
    from safetensors import safe_open

    found = load_file(str(folder / WEIGHTED_FILE))
    with safe_open(str(folder / WEIGHTED_FILE), "np") as handle:
        metadata = handle.metadata()
    for name, value in tensors.items():
        if value is None:
            found.pop(name)
        else:
            found[name] = value
    save_file(found, str(folder / WEIGHTED_FILE), metadata=metadata)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gain": None}, "no 'gain' tensor"),
        ({"queries": np.zeros((3, 8), dtype=np.float32)}, r"'queries' has shape \(3, 8\); expected"),
        ({"keys": np.zeros((1, 1), dtype=np.float32)}, "'keys' has shape"),
        ({"gain": np.zeros((2, 2), dtype=np.float32)}, r"'gain' must hold one number a head \(2,\)"),
        ({"gain": np.zeros(3, dtype=np.float32)}, r"'gain' must hold one number a head \(2,\)"),
        ({"gain": np.array([np.nan, 0.0], dtype=np.float32)}, "'gain' holds NaN"),
    ],
)
def test_a_damaged_weights_file_names_the_file_and_tensor(
    weighted_folder: tuple[Path, WeightedMean], change: dict, message: str
) -> None:
    folder, _ = weighted_folder
    _damage(folder, **change)
    with pytest.raises(ModelFolderError, match=f"{WEIGHTED_FILE}.*{message}"):
        open_model(str(folder))


def test_a_weights_file_and_modules_json_must_agree(weighted_folder: tuple[Path, WeightedMean]) -> None:
    folder, _ = weighted_folder
    (folder / WEIGHTED_FILE).write_bytes(b"not safetensors")
    with pytest.raises(ModelFolderError, match=f"{WEIGHTED_FILE}: cannot be read"):
        open_model(str(folder))
    (folder / WEIGHTED_FILE).unlink()  # the module says weighted, the file is gone
    with pytest.raises(ModelFolderError, match=f"modules.json.*{WEIGHTED_FILE} is missing"):
        open_model(str(folder))


def test_sentence_transformers_loading_a_damaged_folder_names_the_file(
    weighted_folder: tuple[Path, WeightedMean],
) -> None:
    """A weights file cut by hand: sentence-transformers' own loader stops with sentcl's error naming it."""
    from sentence_transformers import SentenceTransformer

    folder, _ = weighted_folder
    data = (folder / WEIGHTED_FILE).read_bytes()
    (folder / WEIGHTED_FILE).write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelFolderError, match=f"{WEIGHTED_FILE}: cannot be read"):
        SentenceTransformer(str(folder), device="cpu", trust_remote_code=True)


def test_a_folder_sentence_transformers_wrote_is_the_one_table_form_until_a_weights_file_is_added(
    tiny_bert: Path, tmp_path: Path
) -> None:
    """A StaticEmbedding folder that sentence-transformers saved itself opens as the plain mean; a weights file
    dropped into it by hand, its modules.json unchanged, is refused naming modules.json, not read as either form."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    rust = AutoTokenizer.from_pretrained(str(tiny_bert)).backend_tokenizer
    table = np.random.default_rng(8).normal(size=(rust.get_vocab_size(), 6)).astype(np.float32)  # (V, 6)
    theirs = SentenceTransformer(modules=[StaticEmbedding(rust, embedding_weights=table)], device="cpu")
    theirs.save(str(tmp_path / "st"))
    model = open_model(str(tmp_path / "st"))
    assert model.weighted is None
    np.testing.assert_allclose(
        model.encode(SENTENCES[:3]), theirs.encode(SENTENCES[:3]), rtol=1e-5, atol=1e-6
    )
    donor = save_static(
        tmp_path / "weighted",
        rust,
        table,
        weighted=trained_like(9, vocab=len(table), width=6, out=6).tables(),
    )
    (tmp_path / "st" / WEIGHTED_FILE).write_bytes((donor / WEIGHTED_FILE).read_bytes())
    with pytest.raises(ModelFolderError, match=f"modules.json.*{WEIGHTED_FILE} is present"):
        open_model(str(tmp_path / "st"))
