"""Small data for the tests: random corpora and STS files over the tiny vocabulary, a 4-step recipe, and the
shared sentence lists."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from helpers.tiny_bert import WORDS


def write_corpus(path: Path, num_lines: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(num_lines)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def tiny_recipe(
    model: Path, data_dir: Path, corpus: Path, output_dir: Path, **training: object
) -> dict[str, Any]:
    """The sections of a 4-step unsupervised SimCSE recipe on the tiny model: STS-B dev every 2 steps."""
    return {
        "model": {"name_or_path": str(model), "pooler": "cls", "max_length": 16},
        "data": {"data_dir": str(data_dir), "train_file": str(corpus)},
        "objective": {"name": "unsup_simcse", "temperature": 0.05},
        "training": {
            "output_dir": str(output_dir),
            "batch_size": 8,
            "max_steps": 4,
            "eval_steps": 2,
            "save_steps": 2,
            "log_steps": 1,
            "progress": False,
            "learning_rate": 1e-3,
            **training,
        },
        "eval": {"dev_task": "stsb_dev", "final_tasks": ["stsb_dev"], "batch_size": 64},
    }


def write_small_sts(root: Path, pairs: int = 40, seed: int = 0) -> Path:
    """A data folder with tiny STS-B dev and test files (SentEval's 7-column layout), gold spread over 0-5."""
    folder = root / "senteval" / "STS" / "STSBenchmark"
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for split in ("dev", "test"):
        lines = []
        for i in range(pairs):
            s1 = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))
            s2 = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))
            gold = round(5.0 * i / (pairs - 1), 3)  # every gold group is populated, several pairs > 4
            lines.append(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{gold}\t{s1}\t{s2}")
        (folder / f"sts-{split}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


SERVE_CORPUS = [  # the service tests' index (tests/serve/)
    "a man plays the guitar on the road",
    "the dog runs in the garden",
    "a woman is riding a horse near the river",
    "the company said the stock price rises",
    "a child reads a book under the tree",
    "the cat sits on the old car",
    "the team wins the game at night",
    "a bird sings a happy song in the morning",
    "the bank report said the market falls",
    "a young man walks with a small dog",
    "the piano music is slow and sad",
    "a red car is fast on the city road",
]

#: sentences of very different token lengths (padding matters): the step-equality tests' batch
MIXED_LENGTH_SENTENCES = [
    "a man plays guitar",
    "the dog runs in the garden near the river",
    "a child reads",
    "the market falls and the bank said the stock price falls",
    "a young woman is riding a horse on the road",
    "the cat sits",
    "big red car",
]

#: rows from 1 to about 40 tokens (one far longer than the rest): the packed and length-bucketed steps' batch
VERY_MIXED_LENGTH_SENTENCES = [
    "a man plays guitar",
    "the dog runs in the garden near the river and the cat sits on the wall of the old red house "
    "while a child reads a book about the market and the bank",
    "cat",
    "the market falls and the bank said the stock price falls",
    "a young woman is riding a horse on the road",
    "big red car",
    "the cat sits",
    "a child reads a book in the garden near the river while the dog runs",
]


def write(folder: Path, name: str, text: str) -> Path:
    """``text`` (UTF-8) into ``folder/name``, parent folders made: a row's hand-written input file."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
