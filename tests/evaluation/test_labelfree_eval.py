"""``sentcl eval --unlabelled``, the views it encodes, and ``eval.unlabelled_file`` choosing ``best/``, on the
tiny random BERT; each measure against numpy written out here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from helpers.data import write_corpus

from sentcl.cli import main
from sentcl.config import ConfigError, EvalConfig
from sentcl.evaluation.labelfree.report import label_free, model_views
from sentcl.evaluation.labelfree.views import deletion_view, dropout_passes
from sentcl.modeling.open import load_encoder


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture()
def encoder(tiny_bert: Path) -> Any:
    return load_encoder(str(tiny_bert), pooler="avg")


def test_dropout_passes_differ_are_seeded_and_leave_the_model_as_it_was(
    encoder: Any, corpus_file: Path
) -> None:
    sentences = corpus_file.read_text().splitlines()[:20]
    plain = encoder.encode(sentences)
    modes = [m.training for m in encoder.modules()]
    before = torch.get_rng_state()
    first, second = dropout_passes(encoder, sentences, batch_size=7)
    assert torch.equal(torch.get_rng_state(), before)  # the process's RNG stream is left as it was
    assert not np.allclose(first, second) and not np.allclose(first, plain)
    assert np.abs(first - plain).mean() < np.abs(plain).mean()  # dropout noise, not another model
    again = dropout_passes(encoder, sentences, batch_size=7)
    np.testing.assert_array_equal(again[0], first)  # the seed fixes the masks (for one batch size)
    assert [m.training for m in encoder.modules()] == modes and np.allclose(encoder.encode(sentences), plain)
    for module in encoder.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    assert dropout_passes(encoder, sentences) is None  # no dropout, no dropout view


def test_label_free_measures_match_numpy(encoder: Any, corpus_file: Path) -> None:
    sentences = list(dict.fromkeys(corpus_file.read_text().splitlines()))
    got = label_free(model_views(encoder, sentences, 16))["measures"]
    x = unit(encoder.encode(sentences).astype(np.float64))
    d = unit(encoder.encode(deletion_view(sentences)).astype(np.float64))
    n = len(x)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    assert got["alignment_deletion"] == pytest.approx(np.mean(np.sum((x - d) ** 2, axis=1)), rel=1e-5)
    sq = [np.sum((x[i] - x[j]) ** 2) for i, j in pairs]
    assert got["uniformity"] == pytest.approx(np.log(np.mean(np.exp(-2.0 * np.array(sq)))), rel=1e-5)
    assert got["anisotropy"] == pytest.approx(np.mean([x[i] @ x[j] for i, j in pairs]), rel=1e-5)
    nearest = [int(np.argmax(x @ d[i])) == i for i in range(n)]
    assert got["self_retrieval_at_1"] == pytest.approx(np.mean(nearest))
    s = np.linalg.svd(encoder.encode(sentences).astype(np.float64), compute_uv=False)
    p = s / s.sum() + 1e-7
    assert got["rankme"] == pytest.approx(np.exp(-np.sum(p * np.log(p))), rel=1e-4)
    a, b = (unit(v.astype(np.float64)) for v in dropout_passes(encoder, sentences, 16))
    assert got["alignment_dropout"] == pytest.approx(np.mean(np.sum((a - b) ** 2, axis=1)), rel=1e-5)


def test_eval_unlabelled_prints_the_table_and_writes_json(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_corpus(tmp_path / "mine.txt", 60)
    out = tmp_path / "lf.json"
    args = [
        "eval",
        "--model",
        str(tiny_bert),
        "--unlabelled",
        str(corpus),
    ]  # the folder's own pooler, as the teacher
    code = main(
        [*args, "--teacher", str(tiny_bert), "--compression", "int8", "binary", "8", "--output", str(out)]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "RankMe: Assessing the Downstream Performance" in printed and "Wang and Isola, 2020" in printed
    assert "recall_at_10[first 8 dims]" in printed
    result = json.loads(out.read_text())[f"unlabelled:{corpus}"]
    assert result["corpus"]["distinct_sentences"] == len(set(corpus.read_text().splitlines()))
    assert result["measures"]["teacher_agreement_at_10"] == 1.0  # its own teacher
    assert set(result["recall_at_10"]) == {"int8", "binary", "8"}
    assert "sts" not in json.loads(out.read_text())  # no STS unless asked


def test_eval_unlabelled_recall_of_a_built_index(
    tiny_bert: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("faiss")
    lines = tmp_path / "index.txt"
    write_corpus(lines, 400, seed=1)
    model = ["--model", str(tiny_bert), "--pooler", "avg"]
    assert (
        main(
            [
                "encode",
                *model,
                "--input",
                str(lines),
                "--output",
                str(tmp_path / "emb"),
                "--shard-size",
                "200",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "index",
                "build",
                "--embeddings",
                str(tmp_path / "emb"),
                "--type",
                "binary",
                "--output",
                str(tmp_path / "bin"),
            ]
        )
        == 0
    )
    queries = write_corpus(tmp_path / "queries.txt", 40, seed=2)
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "eval",
                *model,
                "--unlabelled",
                str(queries),
                "--index",
                str(tmp_path / "bin"),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    recall = json.loads(out.read_text())[f"unlabelled:{queries}"]["index_recall_at_10"]
    assert 0.0 < recall <= 1.0
    assert "recall_at_10[index]" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("lines", "extra", "message"),
    [
        ([], [], "no sentences (the file is empty or every line is blank)"),
        (["one line"], [], "1 distinct sentence(s); the label-free measures need at least 11"),
        (["same"] * 30, [], "(30 lines, all repeats of 1)"),
        ([f"s {i}" for i in range(20)], ["--compression", "999"], "the embeddings have only 32 dimensions"),
    ],
)
def test_bad_unlabelled_input_is_one_line(
    tiny_bert: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    lines: list[str],
    extra: list[str],
    message: str,
) -> None:
    path = tmp_path / "u.txt"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    out = tmp_path / "never.json"
    code = main(["eval", "--model", str(tiny_bert), "--unlabelled", str(path), *extra, "--output", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("sentcl eval: error: ") and message in err[-1]
    assert not out.exists()  # nothing half-written


def test_companion_options_need_unlabelled(tiny_bert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--model", str(tiny_bert), "--teacher", str(tiny_bert)]) == 2
    assert (
        "--teacher measure(s) the model on unlabelled text: add --unlabelled FILE" in capsys.readouterr().err
    )


def test_unlabelled_file_picks_the_best_checkpoint(tiny_bert: Path, tmp_path: Path, data_dir: Path) -> None:
    corpus = write_corpus(tmp_path / "train.txt", 40)
    mine = write_corpus(tmp_path / "mine.txt", 30, seed=5)
    recipe = {
        "model": {"name_or_path": str(tiny_bert)},
        "data": {"data_dir": str(data_dir), "train_file": str(corpus)},
        "training": {
            "output_dir": str(tmp_path / "run"),
            "batch_size": 8,
            "max_steps": 3,
            "eval_steps": 1,
            "progress": False,
        },
        "eval": {"unlabelled_file": str(mine), "unlabelled_measure": "uniformity", "final_tasks": []},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    assert main(["train", "--config", str(tmp_path / "r.yaml")]) == 0
    events = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    values = [e["unlabelled_uniformity"] for e in events if e.get("event") == "eval"]
    assert len(values) == 3
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["dev_task"] == "unlabelled_uniformity"
    assert results["best_dev_score"] == pytest.approx(-min(values))  # lower uniformity is better
    best = load_encoder(str(tmp_path / "run" / "best"))
    sentences = list(dict.fromkeys(mine.read_text().splitlines()))
    again = label_free(model_views(best, sentences))["measures"]["uniformity"]
    assert again == pytest.approx(min(values), abs=1e-4)


def test_config_checks_the_unlabelled_keys() -> None:
    assert EvalConfig(unlabelled_file="mine.txt", unlabelled_measure="rankme").unlabelled_measure == "rankme"
    with pytest.raises(ConfigError, match="eval.unlabelled_measure"):
        EvalConfig(unlabelled_measure="accuracy")
    with pytest.raises(ConfigError, match="eval.unlabelled_file is empty"):
        EvalConfig(unlabelled_file="  ")
    with pytest.raises(ConfigError, match="eval.unlabelled_sample"):
        EvalConfig(unlabelled_sample=0)


def test_every_measure_that_may_pick_best_has_code_and_a_paper() -> None:
    from sentcl.config.unlabelled import UNLABELLED_MEASURES
    from sentcl.evaluation.labelfree.report import MEASURES, PAPERS

    assert list(UNLABELLED_MEASURES) == list(MEASURES)
    assert set(MEASURES) <= set(PAPERS)
