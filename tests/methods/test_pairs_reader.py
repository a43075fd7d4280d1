"""Pair files (x, x+) for SimCSE Table 4: strict csv/tsv/jsonl parsing with file:line errors, and sup_pairs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sentcl.config import TrainConfig, load_config
from sentcl.data.pairs import read_pairs
from sentcl.data.readers import Corpus, DataFormatError
from sentcl.data.sources import read_training_data
from sentcl.methods import build_method

PAIRS = [("a man plays a guitar", 'a man plays "music", loudly'), ("the dog runs", "a dog is running")]


def test_csv_written_by_the_csv_module_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "qqp.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)  # the real writer: quotes the field with a comma and doubles the quotes
        writer.writerow(["sent0", "sent1"])
        writer.writerows(PAIRS)
    assert '"a man plays ""music"", loudly"' in path.read_text(encoding="utf-8")
    assert read_training_data("pairs", path).examples == PAIRS


def test_tsv_and_jsonl(tmp_path: Path) -> None:
    tsv = tmp_path / "flickr.tsv"
    tsv.write_text("sent0\tsent1\n" + "\n".join("\t".join(p) for p in PAIRS) + "\n\n", encoding="utf-8")
    corpus = read_pairs(tsv)
    assert corpus.examples == PAIRS and corpus.skipped == {"empty_lines": 1}
    jsonl = tmp_path / "paranmt.jsonl"
    jsonl.write_text(
        "\n".join(json.dumps({"sent0": a, "sent1": b}) for a, b in PAIRS) + "\n", encoding="utf-8"
    )
    assert read_pairs(jsonl, max_examples=1).examples == PAIRS[:1]


@pytest.mark.parametrize(
    ("name", "text", "where", "message"),
    [
        ("bad.csv", 'sent0,sent1\na,b\n"a newline\ninside",b\n', ":3:", "runs over a line break"),
        ("bad.csv", 'sent0,sent1\na,"unbalanced\n', ":2:", "unbalanced quote"),
        ("bad.csv", "sent0,sent1\na,b\nc,d,e\n", ":3:", "expected 2 fields"),
        ("bad.csv", "sent0,sent1\na,\n", ":2:", "field 'sent1' is empty"),
        ("bad.csv", "question1,question2\na,b\n", ":1:", "header sent0,sent1"),
        ("bad.tsv", "sent0\tsent1\na\tb\tc\n", ":2:", "expected 2 fields"),
        ("bad.jsonl", '{"sent0": "a", "sent1": "b"}\n{"sent0": "a"}\n', ":2:", "keys sent0, sent1"),
        (
            "bad.jsonl",
            '{"sent0": "a", "sent1": "b"}\n{"sent0": "a", "sent1": 3}\n',
            ":2:",
            "must be a string",
        ),
        ("bad.jsonl", '{"sent0": "a", "sent1": "b"}\n{oops\n', ":2:", "not valid JSON"),
        ("bad.txt", "a\tb\n", "", "pair files are"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, name: str, text: str, where: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match=message) as err:
        read_pairs(path)
    assert f"{path}{where}" in str(err.value)


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(b"sent0,sent1\na,b\ncaf\xe9,c\n")
    with pytest.raises(DataFormatError, match=f"{path}:3:"):
        read_pairs(path)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_sup_pairs_is_infonce_on_the_pairs() -> None:
    cfg = load_config(TrainConfig, None, ["objective.name=sup_pairs", "objective.temperature=0.05"])
    triples = [("p1", "e1", "c1"), ("p2", "e2", "c2"), ("p3", "e3", "c3")]
    method = build_method(cfg, Corpus(Path("x"), triples), tokenizer=None)
    assert [method.views(t) for t in triples] == [(p, e) for p, e, _ in triples]  # no hard negative view
    z = torch.randn(3, 2, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    h = z.numpy()
    expected = np.mean(
        [
            -np.log(
                np.exp(_cos(h[i, 0], h[i, 1]) / 0.05)
                / sum(np.exp(_cos(h[i, 0], h[j, 1]) / 0.05) for j in range(3))
            )
            for i in range(3)
        ]
    )
    assert method.objective(z)["loss"].item() == pytest.approx(expected, rel=1e-10)
