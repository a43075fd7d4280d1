"""Long evaluations say how far they are; --tasks mteb prints the STS table; STS-B dev rows say "dev";
a run with ``final_tasks: []`` logs no dangling "on "; the one evaluation path embeds before normalisation."""

from __future__ import annotations

import io
import logging
import zlib
from pathlib import Path

import numpy as np
import pytest

from sentcl.evaluation.embedding import before_normalisation, evaluation_encode_fn
from sentcl.evaluation.progress import Progress
from sentcl.evaluation.runner import evaluate, format_mteb_table, format_results
from sentcl.evaluation.sts import format_sts_table


def hash_encoder(texts: list[str]) -> np.ndarray:
    table = np.random.default_rng(0).normal(size=(1024, 16))
    out = np.zeros((len(texts), 16))
    for i, text in enumerate(texts):
        for w in text.lower().split():
            out[i] += table[zlib.crc32(w.encode()) % 1024]
    return out


def test_progress_line_per_part_when_not_a_terminal(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluate(hash_encoder, data_dir, ["dev", "stsb"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("eval:")]
    assert [line.split(" (")[0] for line in lines] == [
        "eval: 1/3 done: dev STSBenchmark",
        "eval: 2/3 done: dev SICKRelatedness",
        "eval: 3/3 done: stsb",
    ]
    evaluate(hash_encoder, data_dir, ["stsb"], progress=False)
    assert "eval:" not in capsys.readouterr().err


def test_progress_bar_on_a_terminal() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    meter = Progress(3, stream=stream)
    for name in ("a", "b", "c"):
        meter.done(name)
    meter.close()
    text = stream.getvalue()
    assert "3/3" in text and "done:" not in text  # tqdm's bar, not the line-per-part log


def test_stsb_dev_row_says_dev(data_dir: Path) -> None:
    dev = format_results({"m": evaluate(hash_encoder, data_dir, ["stsb_dev"], progress=False)})
    test = format_results({"m": evaluate(hash_encoder, data_dir, ["stsb"], progress=False)})
    assert "| STS-B dev |" in dev and "| STS-B |" not in dev
    assert "| STS-B |" in test and "dev" not in test.split("\n", 1)[1]
    both = format_results({"m": evaluate(hash_encoder, data_dir, ["dev"], progress=False)})
    assert "| STS-B dev |" in both and "| SICK-R dev |" in both


def test_mteb_result_prints_the_sts_table() -> None:
    mteb = {"STS12": 70.0, "STS13": 71.0, "STS14": 72.0, "STS15": 73.0, "STS16": 74.0}
    mteb |= {"STSBenchmark": 75.0, "SICK-R": 76.5, "avg": 73.07, "scores": {"STS12": {}}}
    expected = [
        "| Task | m |",
        "|---|---:|",
        "| STS12 | 70.00 |",
        "| STS13 | 71.00 |",
        "| STS14 | 72.00 |",
        "| STS15 | 73.00 |",
        "| STS16 | 74.00 |",
        "| STS-B | 75.00 |",
        "| SICK-R | 76.50 |",
        "| Avg. | 73.07 |",
    ]
    assert format_mteb_table({"m": mteb}).splitlines() == expected
    assert format_results({"m": {"mteb": mteb}}) == "## mteb\n" + "\n".join(expected)


@pytest.mark.slow
def test_mteb_task_through_the_cli(
    tiny_bert: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mteb")
    from sentcl.cli import main

    assert main(["eval", "--model", str(tiny_bert), "--pooler", "avg", "--tasks", "mteb", "sts"]) == 0
    out = capsys.readouterr().out
    mteb_part, sts_part = out.split("## sts")
    assert "{" not in mteb_part and "| SICK-R |" in mteb_part
    # mteb's scores equal ours (the same cosine Spearman) to 1e-4 x 100, row by row
    rows = [line for line in mteb_part.splitlines() if line.startswith("| STS") or line.startswith("| SICK")]
    ours = [line for line in sts_part.splitlines() if line.startswith("| STS") or line.startswith("| SICK")]
    assert len(rows) == 7 and len(ours) == 7
    for a, b in zip(rows, ours, strict=True):
        assert a.split("|")[1] == b.split("|")[1]
        assert float(a.split("|")[2]) == pytest.approx(float(b.split("|")[2]), abs=0.02)


def test_sts_table_is_unchanged_for_test_splits() -> None:
    res = {"STSBenchmark": {"spearman": 80.0, "split": "test"}, "avg": 80.0}
    assert format_sts_table({"a": res}).splitlines()[2] == "| STS-B | 80.00 |"


class Normalising:
    """A stand-in encoder whose output is normalised (like a sentence-transformers Normalize module)."""

    def __init__(self) -> None:
        self.normalize_output, self.calls = True, []

    def encode(self, sentences: list[str], batch_size: int = 64) -> np.ndarray:
        self.calls.append(list(sentences))
        raw = hash_encoder(sentences) + 1.0
        return raw / np.linalg.norm(raw, axis=1, keepdims=True) if self.normalize_output else raw


def test_evaluation_path_embeds_before_normalisation_once_per_sentence() -> None:
    model = Normalising()
    encode = evaluation_encode_fn(model, batch_size=8)
    out = encode(["a b", "c", "a b"])
    np.testing.assert_allclose(out, hash_encoder(["a b", "c", "a b"]) + 1.0, rtol=1e-6)  # not normalised
    assert model.normalize_output is True  # restored
    encode(["c", "d"])
    assert model.calls == [["a b", "c"], ["d"]]  # each distinct sentence once
    with before_normalisation(model):
        assert model.normalize_output is False
    assert model.normalize_output is True


def test_python_api_uses_the_evaluation_path(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sentcl
    from sentcl.evaluation import runner
    from sentcl.evaluation.embedding import EvaluationEncoder

    seen = []
    monkeypatch.setattr(runner, "evaluate", lambda encode, *args, **kwargs: seen.append(encode) or {})
    model = Normalising()
    sentcl.evaluate(model, ["transfer_fast"], data_dir=str(data_dir), batch_size=16)  # type: ignore[arg-type]
    assert isinstance(seen[0], EvaluationEncoder) and seen[0].batch_size == 16
    np.testing.assert_allclose(
        seen[0](["x y"]), hash_encoder(["x y"]) + 1.0, rtol=1e-6
    )  # before normalisation


def test_empty_final_tasks_log(
    tiny_bert: Path, data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from helpers.data import tiny_recipe, write_corpus

    from sentcl.config import TrainConfig, from_dict
    from sentcl.training.loop import train

    corpus = write_corpus(tmp_path / "corpus.txt", 32)
    recipe = tiny_recipe(tiny_bert, data_dir, corpus, tmp_path / "run", save_steps=0, max_steps=2)
    recipe["eval"]["final_tasks"] = []
    with caplog.at_level(logging.INFO, logger="sentcl"):
        train(from_dict(TrainConfig, recipe))
    messages = [r.getMessage() for r in caplog.records if "evaluating the best model" in r.getMessage()]
    assert len(messages) == 1 and not messages[0].rstrip().endswith(" on")
    assert "no tasks (eval.final_tasks is empty)" in messages[0]


def test_transfer_tasks_option_is_checked(tiny_bert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sentcl.cli import main

    assert main(["eval", "--model", str(tiny_bert), "--tasks", "sts", "--transfer-tasks", "TREC"]) == 2
    assert "--transfer-tasks chooses among the transfer tasks" in capsys.readouterr().err
    with pytest.raises(SystemExit) as err:
        main(["eval", "--model", str(tiny_bert), "--tasks", "transfer", "--transfer-tasks", "SNLI"])
    assert err.value.code == 2 and "invalid choice: 'SNLI'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="transfer tasks: SNLI"):
        evaluate(hash_encoder, Path("."), ["transfer"], transfer_tasks=["SNLI"])
