"""sentcl mine: hard negatives against a brute-force loop over all (anchor, corpus) pairs; the CSV trains."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from sentcl.cli import main
from sentcl.data.nli import read_nli_csv
from sentcl.index.mining import MiningSettings, mine
from sentcl.index.pairs import read_pairs
from sentcl.modeling.encoder import SentenceEncoder


def brute_force(
    anchors: np.ndarray, corpus: np.ndarray, positives: list[list[int]], s: MiningSettings, anchor_ids: list
) -> list[list[int]]:
    """A hand-written loop: every cosine, sort, pool of range_max + max_pos (+1), filters, rank window, top n."""
    max_pos = max(len(p) for p in positives)
    range_max = s.window(max_pos)[1]
    out = []
    for q, a in enumerate(anchors):
        cos = []
        for j, c in enumerate(corpus):
            dot = sum(float(x) * float(y) for x, y in zip(a, c, strict=True))
            na = math.sqrt(sum(float(x) ** 2 for x in a))
            nc = math.sqrt(sum(float(y) ** 2 for y in c))
            cos.append((dot / (na * nc), j))
        by_id = dict((j, v) for v, j in cos)
        pool = sorted(cos, key=lambda t: (-t[0], t[1]))[
            : range_max + max_pos + (1 if s.exclude_anchor and anchor_ids[q] is not None else 0)
        ]  # one extra candidate only where the anchor's own text is in the corpus and dropped
        p = min(by_id[j] for j in positives[q])
        kept = []
        for v, j in pool:
            if j in positives[q] or (s.exclude_anchor and j == anchor_ids[q]):
                continue
            if s.absolute_margin is not None and v + s.absolute_margin > p:
                continue
            if s.relative_margin is not None and v > p - abs(p) * s.relative_margin:
                continue
            if s.max_score is not None and v > s.max_score:
                continue
            if s.min_score is not None and v < s.min_score:
                continue
            kept.append(j)
        out.append(kept[s.range_min : range_max][: s.num_negatives])
    return out


SETTINGS = [
    MiningSettings(),
    MiningSettings(num_negatives=5, range_min=2, range_max=12),
    MiningSettings(num_negatives=4, absolute_margin=0.0, max_score=0.6),
    MiningSettings(num_negatives=3, relative_margin=0.05, min_score=-0.2),
    MiningSettings(num_negatives=2, range_max=4, exclude_anchor=False),
]


@pytest.mark.parametrize(
    "settings", SETTINGS, ids=lambda s: f"n{s.num_negatives}-r{s.range_min}-{s.range_max}"
)
def test_mine_equals_brute_force(settings: MiningSettings) -> None:
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((60, 8)).astype(np.float32)
    anchors = corpus[:20] + 0.5 * rng.standard_normal((20, 8)).astype(np.float32)
    positives = [[q] if q % 3 else [q, q + 20] for q in range(20)]  # some anchors have two positives
    anchor_ids = [q + 40 if q % 4 == 0 else None for q in range(20)]  # "anchor text" sits in the corpus
    anchors[::4] = corpus[40:60:4][: len(anchors[::4])]  # ... and is that very vector
    ids, scores, _ = mine(anchors, corpus, positives, settings, anchor_ids)
    assert ids == brute_force(anchors, corpus, positives, settings, anchor_ids)
    for row in scores:
        assert row == sorted(row, reverse=True)


def test_random_sampling_stays_in_the_window() -> None:
    rng = np.random.default_rng(1)
    corpus = rng.standard_normal((40, 8)).astype(np.float32)
    positives = [[q] for q in range(10)]
    window = MiningSettings(num_negatives=8, range_min=1, range_max=9)
    allowed = brute_force(corpus[:10], corpus, positives, window, [None] * 10)
    sampled = MiningSettings(num_negatives=3, range_min=1, range_max=9, sampling="random", seed=3)
    ids, _, _ = mine(corpus[:10], corpus, positives, sampled, [None] * 10)
    assert all(len(r) == 3 and set(r) <= set(a) for r, a in zip(ids, allowed, strict=True))
    assert ids == mine(corpus[:10], corpus, positives, sampled, [None] * 10)[0]  # seeded


PAIRS = [
    ("a man plays the guitar", "a man is playing music"),
    ("the dog runs in the garden", "a dog is running outside"),
    ("the stock price falls", "the market goes down"),
    ("a bird sits in the green tree", "a bird is in a tree"),
    ("the woman is playing the piano", "a woman plays music"),
    ("the cat sits on the old car", "a cat is on a car"),
    ("the young team wins the game", "the team won"),
    ("a child is reading near the river", "a kid reads a book"),
]


def test_mine_cli_writes_csv_that_supervised_simcse_trains_on(
    tmp_path: Path, tiny_bert: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("anchor\tpositive\n" + "".join(f"{a}\t{p}\n" for a, p in PAIRS), encoding="utf-8")
    extra = tmp_path / "extra.txt"
    extra.write_text("the bank said the market rises\na horse is running on the road\n" + PAIRS[0][1] + "\n")
    out = tmp_path / "mined.csv"
    argv = [
        "mine",
        "--model",
        str(tiny_bert),
        "--pooler",
        "avg",
        "--pairs",
        str(pairs),
        "--corpus",
        str(extra),
    ]
    assert main([*argv, "--output", str(out), "--num-negatives", "2"]) == 0
    capsys.readouterr()
    with open(out, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["sent0", "sent1", "hard_neg"]
    # reference: the same texts, encoded alone, through the brute-force loop
    enc = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    corpus_texts = [p for _, p in PAIRS] + [
        "the bank said the market rises",
        "a horse is running on the road",
    ]
    a = np.stack([enc.encode(t) for t, _ in PAIRS])
    c = np.stack([enc.encode(t) for t in corpus_texts])
    expected = brute_force(a, c, [[q] for q in range(8)], MiningSettings(num_negatives=2), [None] * 8)
    want = [
        [anc, pos, corpus_texts[j]] for (anc, pos), negs in zip(PAIRS, expected, strict=True) for j in negs
    ]
    assert rows[1:] == want
    assert all(
        r[2] != r[1] for r in rows[1:]
    )  # the positive (and its duplicate in --corpus) never a negative

    corpus = read_nli_csv(out)
    assert [list(e) for e in corpus.examples] == want
    recipe = {
        "model": {"name_or_path": str(tiny_bert), "pooler": "cls", "max_length": 16},
        "data": {"data_dir": str(data_dir), "train_file": str(out), "reader": "nli_csv"},
        "objective": {"name": "sup_simcse", "temperature": 0.05},
        "training": {"output_dir": str(tmp_path / "run"), "batch_size": 4, "max_steps": 2, "eval_steps": 100}
        | {"save_steps": 100, "progress": False},
        "eval": {"dev_task": "stsb_dev", "final_tasks": [], "batch_size": 64},
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    assert main(["train", "--config", str(tmp_path / "r.yaml")]) == 0
    assert (tmp_path / "run" / "best").is_dir() or any((tmp_path / "run").glob("checkpoint-*"))


@pytest.mark.parametrize(
    ("name", "text", "error"),
    [
        ("p.csv", "anchor,positive\na,b\nc\n", r"p\.csv:3: expected 2 fields"),
        ("p.csv", 'anchor,positive\n"a,b\nc,d\n', r"p\.csv:2: a field runs over a line break"),
        ("p.csv", "sent0,other\na,b\n", r"p\.csv:1: no positive column"),
        ("p.tsv", "anchor\tpositive\na\t \n", r"p\.tsv:2: field 'positive' is empty"),
        ("p.jsonl", '{"anchor": "a", "positive": "b"}\n{"anchor": "a"\n', r"p\.jsonl:2: not valid JSON"),
        ("p.jsonl", '{"anchor": "a", "positive": 3}\n', r"p\.jsonl:1: 'positive' must be a non-empty string"),
        ("p.txt", "a,b\n", r"unknown pairs format"),
        ("p.csv", "", r"p\.csv: the file is empty"),
    ],
)
def test_bad_pairs_files_name_file_and_line(tmp_path: Path, name: str, text: str, error: str) -> None:
    from sentcl.data.readers import DataFormatError

    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match=error):
        read_pairs(tmp_path / name)


def test_pairs_formats_agree(tmp_path: Path) -> None:
    (tmp_path / "p.csv").write_text('query,sent1,x\n"a, quoted ""one""",b,1\nc,d,2\n', encoding="utf-8")
    (tmp_path / "p.jsonl").write_text(
        '{"query": "a, quoted \\"one\\"", "sent1": "b"}\n\n{"query": "c", "sent1": "d"}\n', encoding="utf-8"
    )
    assert [p[1:] for p in read_pairs(tmp_path / "p.csv")] == [('a, quoted "one"', "b"), ("c", "d")]
    assert [p[1:] for p in read_pairs(tmp_path / "p.jsonl")] == [('a, quoted "one"', "b"), ("c", "d")]
