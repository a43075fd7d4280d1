"""sentcl in mteb: the adapter meets mteb's encoder protocol, and mteb's own STS evaluation of a local task
gives sentcl's figure."""

from __future__ import annotations

from pathlib import Path

import pytest
from mteb.models.models_protocols import EncoderProtocol

from sentcl.cli import main
from sentcl.evaluation.sts import evaluate_sts
from sentcl.interop.mteb_adapter import _run, local_sts_tasks, mteb_encoder
from sentcl.modeling.encoder import SentenceEncoder


def test_stsbenchmark_mteb_equals_sentcl(tiny_bert: Path, data_dir: Path) -> None:
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    encode = lambda s: model.encode(s, batch_size=128)  # noqa: E731
    encoder = mteb_encoder(encode, "tiny")
    assert isinstance(encoder, EncoderProtocol)  # mteb's runtime check before it evaluates
    (task,) = local_sts_tasks(data_dir, ["STSBenchmark"])
    test = task.dataset["default"]["test"]
    # the data: every scored pair of SentEval's sts-test.csv (counted here from the file itself)
    rows = (data_dir / "senteval" / "STS" / "STSBenchmark" / "sts-test.csv").read_text(encoding="utf-8")
    scored = [r.split("\t") for r in rows.splitlines() if r.strip()]
    assert len(test) == len(scored) == 1379
    assert (test[0]["sentence1"], test[0]["score"]) == (scored[0][5].strip(), float(scored[0][4]))
    result = _run(encoder, [task], batch_size=128)  # mteb's AbsTaskSTS.evaluate and its STS evaluator
    ours = evaluate_sts(encode, data_dir, tasks=("STSBenchmark",))["STSBenchmark"]["spearman"]
    assert result["STSBenchmark"] == pytest.approx(ours, abs=0.01)
    assert result["scores"]["STSBenchmark"]["default/test"]["cosine_spearman"] * 100 == pytest.approx(
        ours, abs=0.01
    )


def test_unknown_hub_task_is_one_line(tiny_bert: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["eval", "--model", str(tiny_bert), "--tasks", "stsb_dev", "--mteb-tasks", "NoSuchTaskXYZ"]
    assert main(args) == 2
    assert "NoSuchTaskXYZ" in capsys.readouterr().err
