"""The truncation dimension: ``encode``/``eval --truncate-dim``, sentcl.json, and the ``--truncate-dims`` sweep."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from sentcl.cli import main
from sentcl.files.paths import ModelFolderError
from sentcl.modeling.encoder import SENTCL_CONFIG, SentenceEncoder
from sentcl.report.dimensions import plot_sweeps, read_sweep

SENTENCES = ["a dog runs in the garden", "the man is playing music", "a red car", "the stock price falls"]
PAIRS = [
    ("a man plays guitar", "a man plays music", 4.5),
    ("the dog runs", "the cat sits", 1.0),
    ("a woman eats", "a woman is eating", 5.0),
    ("the market falls", "the bank said", 0.5),
    ("a child reads", "a young child reads", 4.0),
    ("the car is red", "the road is old", 0.0),
    ("a bird sings", "a bird sings a song", 4.2),
]


def _encoder(tiny_bert: Path, **kw: object) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg", **kw)


def test_prefix_is_the_first_k_coordinates(tiny_bert: Path) -> None:
    model = _encoder(tiny_bert)
    full = model.encode(SENTENCES)
    model.set_truncate_dim(8)
    assert model.embedding_dim == 8 and model.full_embedding_dim == 32
    np.testing.assert_allclose(model.encode(SENTENCES), full[:, :8], rtol=1e-5, atol=1e-6)
    unit = model.encode(SENTENCES, normalize=True)  # normalize applies to the prefix
    np.testing.assert_allclose(
        unit, full[:, :8] / np.linalg.norm(full[:, :8], axis=1, keepdims=True), rtol=1e-5, atol=1e-6
    )
    model.normalize_output = True  # a Normalize module re-normalises the prefix
    np.testing.assert_allclose(np.linalg.norm(model.encode(SENTENCES), axis=1), 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="exceeds the embedding size 32"):
        model.set_truncate_dim(64)


def test_saved_in_sentcl_json_and_reloaded(tiny_bert: Path, tmp_path: Path) -> None:
    model = _encoder(tiny_bert)
    full = model.encode(SENTENCES)
    model.set_truncate_dim(16)
    model.save_pretrained(tmp_path / "m")
    assert json.loads((tmp_path / "m" / SENTCL_CONFIG).read_text())["truncate_dim"] == 16
    again = SentenceEncoder.from_pretrained(str(tmp_path / "m"))
    assert again.embedding_dim == 16
    np.testing.assert_allclose(again.encode(SENTENCES), full[:, :16], rtol=1e-5, atol=1e-6)
    # training always starts from the full vector
    assert SentenceEncoder.from_pretrained(str(tmp_path / "m"), for_training=True).truncate_dim is None


@pytest.mark.parametrize(
    ("value", "match"), [("16", "positive whole number"), (99, "exceeds the embedding size")]
)
def test_bad_sentcl_json_value_names_the_file(
    tiny_bert: Path, tmp_path: Path, value: object, match: str
) -> None:
    _encoder(tiny_bert).save_pretrained(tmp_path / "m")
    file = tmp_path / "m" / SENTCL_CONFIG
    meta = json.loads(file.read_text())
    file.write_text(json.dumps(meta | {"truncate_dim": value}))
    with pytest.raises(ModelFolderError, match=rf"sentcl.json.*{match}"):
        SentenceEncoder.from_pretrained(str(tmp_path / "m"))


def test_encode_cli_truncate_dim(tiny_bert: Path, tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    common = ["encode", "--model", str(tiny_bert), "--pooler", "avg", "--input", str(tmp_path / "in.txt")]
    assert main([*common, "--output", str(tmp_path / "full.npy")]) == 0
    assert main([*common, "--output", str(tmp_path / "k.npy"), "--truncate-dim", "8"]) == 0
    full, short = np.load(tmp_path / "full.npy"), np.load(tmp_path / "k.npy")
    assert short.shape == (4, 8)
    np.testing.assert_allclose(short, full[:, :8], rtol=1e-5, atol=1e-6)


def test_truncate_dim_errors(tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.txt").write_text("a dog\n", encoding="utf-8")
    args = ["encode", "--model", str(tiny_bert), "--input", str(tmp_path / "in.txt"), "--output"]
    assert main([*args, str(tmp_path / "o.npy"), "--truncate-dim", "64"]) == 2
    assert "exceeds the embedding size 32" in capsys.readouterr().err
    assert main(["eval", "--model", str(tiny_bert), "--plot", str(tmp_path / "p.png")]) == 2
    assert "--truncate-dims" in capsys.readouterr().err


def _pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.tsv"
    lines = ["sentence1\tsentence2\tscore"] + [f"{a}\t{b}\t{s}" for a, b, s in PAIRS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_eval_sweep_plot_equals_separate_truncated_evaluations(
    tiny_bert: Path, tmp_path: Path, data_dir: Path
) -> None:
    pairs = _pairs_file(tmp_path)
    common = ["eval", "--model", str(tiny_bert), "--pooler", "avg", "--data-dir", str(data_dir)]
    common += ["--tasks", "stsb_dev", "--pairs", str(pairs)]
    plot, out = tmp_path / "dims.png", tmp_path / "sweep.json"
    assert main([*common, "--truncate-dims", "32,8", "--plot", str(plot), "--output", str(out)]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 5000
    sweep = json.loads(out.read_text())["truncate_dims"]
    assert sorted(sweep) == ["32", "8"]
    model = _encoder(tiny_bert)
    u, v = model.encode([p[0] for p in PAIRS]), model.encode([p[1] for p in PAIRS])
    for k in (32, 8):
        single = tmp_path / f"k{k}.json"
        assert main([*common, "--truncate-dim", str(k), "--output", str(single)]) == 0
        alone = json.loads(single.read_text())
        assert sweep[str(k)]["stsb_dev"] == alone["stsb_dev"]
        assert sweep[str(k)][f"pairs:{pairs}"]["spearman"] == alone[f"pairs:{pairs}"]["spearman"]
        # and the reference by hand: Spearman of the cosines of the first k coordinates, x 100
        a, b = u[:, :k], v[:, :k]
        cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
        want = 100 * spearmanr(cos, [p[2] for p in PAIRS]).statistic
        assert alone[f"pairs:{pairs}"]["spearman"] == pytest.approx(want, abs=1e-6)
    assert sweep["32"]["stsb_dev"] != sweep["8"]["stsb_dev"]
    # several sweeps in one figure, read back from the eval JSON
    both = plot_sweeps({"a": out, "b": out}, tmp_path / "both.png")
    assert both.read_bytes()[:4] == b"\x89PNG"
    assert read_sweep(out)[8]["stsb_dev"] == sweep["8"]["stsb_dev"]


def test_encode_truncate_dim_of_a_sentence_transformers_folder(tmp_path: Path) -> None:
    """A folder sentcl did not write (all-MiniLM-L6-v2: ST's Pooling + Normalize), against the real
    sentence-transformers: the first 64 coordinates of its embeddings, re-normalised (the model's output is
    normalised, so sentcl re-normalises the prefix)."""
    from sentence_transformers import SentenceTransformer

    from sentcl.files.paths import resolve_model_path

    (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    args = ["encode", "--model", "all-MiniLM-L6-v2", "--input", str(tmp_path / "in.txt")]
    assert main([*args, "--output", str(tmp_path / "k.npy"), "--truncate-dim", "64"]) == 0
    ours = np.load(tmp_path / "k.npy")
    full = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu").encode(SENTENCES)
    prefix = full[:, :64] / np.linalg.norm(full[:, :64], axis=1, keepdims=True)
    assert ours.shape == (len(SENTENCES), 64)
    np.testing.assert_allclose(ours, prefix, rtol=1e-4, atol=1e-5)
