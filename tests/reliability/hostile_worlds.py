"""What the run part of the hostile matrix (test_hostile_matrix.py) gives the commands that train, distil,
fetch or build data, so that each runs in seconds: a small data folder of every source they read, a 2-step
recipe on the tiny BERT, a one-point grid, a finished 2-step run folder, a loopback download mirror.

``LazyWorld`` builds each of these the first time a case asks for it (a sampled ``make test`` run builds only
what its cases use).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from pathlib import Path

import yaml
from helpers.data import tiny_recipe, write, write_corpus, write_small_sts
from helpers.tiny_bert import WORDS

from sentcl.data.senteval_files import BINARY_FILES


def _lines(rng: random.Random, n: int, lo: int = 3, hi: int = 9) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


def small_data(root: Path) -> Path:
    """A data folder with every English source (the offline corpus of distill-static, shrink, build-corpus),
    SentEval's SNLI (build-nli) and STS-B dev and test of 40 pairs (train's dev task), a few lines each."""
    rng = random.Random(0)
    text = lambda n: "".join(line + "\n" for line in _lines(rng, n))  # noqa: E731
    write(root, "corpora/wiki1m_prefix.txt", text(120))
    labels = ["entailment", "contradiction", "neutral"]
    for split in ("dev", "test"):
        premises = _lines(rng, 4)
        rows = [(p, h, label) for p in premises for h, label in zip(_lines(rng, 3), labels, strict=True)]
        for k, name in enumerate(("s1", "s2", "labels")):
            write(root, f"senteval/SNLI/{name}.{split}", "".join(f"{r[k]}\n" for r in rows))
    for folder, *names in BINARY_FILES.values():
        for name in names:
            write(root, f"senteval/{folder}/{name}", text(4))
    for kind in ("binary", "fine"):
        for split in ("train", "dev", "test"):
            write(root, f"senteval/SST/{kind}/sentiment-{split}", f"{_lines(rng, 1)[0]}\t1\n")
    write(root, "senteval/TREC/train_5500.label", "DESC:manner how a man plays ?\nHUM:ind who runs ?\n")
    write(root, "senteval/TREC/TREC_10.label", "NUM:date when a dog runs ?\n")
    mrpc = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    for split in ("train", "test"):
        write(root, f"senteval/MRPC/msr_paraphrase_{split}.txt", f"{mrpc}1\t1\t2\ta man plays\ta man runs\n")
    sick = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
    for n, name in enumerate(("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt")):
        write(root, f"senteval/SICK/{name}", f"{sick}{n}\ta dog sits\ta cat sits\t3.0\tNEUTRAL\n")
    write(
        root, "senteval/STS/STSBenchmark/sts-train.csv", "main-captions\tMSRvid\t2012test\t0001\t5.0\ta\tb\n"
    )
    write_small_sts(root)
    for year in range(12, 17):
        folder = f"senteval/STS/STS{year}-en-test/"
        write(root, f"{folder}STS.input.news.txt", "a man plays\ta man runs\n")
        write(root, f"{folder}STS.gs.news.txt", "3.0\n")
    return root


def train_recipe(root: Path, model: str, data: str) -> Path:
    """A 2-step unsupervised SimCSE recipe on the tiny model (STS-B dev at the end); its own output folder."""
    corpus = write_corpus(root / "train_corpus.txt", 24)
    sections = tiny_recipe(Path(model), Path(data), corpus, root / "recipe_run", max_steps=2, save_steps=2)
    path = root / "recipe.yaml"
    path.write_text(yaml.safe_dump(sections), encoding="utf-8")
    return path


def one_point_grid(root: Path, recipe: Path) -> Path:
    """A grid of one point (training.seed 1) over ``recipe``, its cpu variant 1 step."""
    grid = {
        "title": "Hostile grid",
        "base": str(recipe),
        "metric": "stsb_dev",
        "vary": {"training.seed": [1]},
        "variants": {"cpu": {"training.max_steps": 1}, "full": {}},
    }
    path = root / "grid.yaml"
    path.write_text(yaml.safe_dump(grid), encoding="utf-8")
    return path


def finished_run(root: Path, recipe: Path) -> Path:
    """A run folder that ``sentcl train`` finished (the recipe's 2 steps and its STS-B dev result)."""
    from sentcl.cli import main

    out = root / "finished_run"
    assert main(["train", "--config", str(recipe), "--output-dir", str(out)]) == 0
    return out


def shrink_pairs(root: Path) -> Path:
    """A scored pairs file of the tiny vocabulary (shrink's --pairs)."""
    rng = random.Random(1)
    rows = [
        f"{a}\t{b}\t{i % 6}" for i, (a, b) in enumerate(zip(_lines(rng, 16), _lines(rng, 16), strict=True))
    ]
    return write(root, "shrink_pairs.tsv", "sentence1\tsentence2\tscore\n" + "\n".join(rows) + "\n")


class LazyWorld(dict[str, str]):
    """The matrix's world: the values built at once (the tiny model, a corpus, shards, an index) and the rest
    built on first use by ``builders[key](world)``; ``close()`` stops what a builder started (the mirror)."""

    def __init__(self, root: Path, values: dict[str, str]) -> None:
        super().__init__(values)
        self.root = root
        self.stack = contextlib.ExitStack()
        self.builders: dict[str, Callable[[LazyWorld], str]] = {
            "DATA": lambda w: str(small_data(w.root / "data")),
            "RECIPE": lambda w: str(train_recipe(w.root, w["M"], w["DATA"])),
            "GRID": lambda w: str(one_point_grid(w.root, Path(w["RECIPE"]))),
            "RUN": lambda w: str(finished_run(w.root, Path(w["RECIPE"]))),
            "SHRINK_PAIRS": lambda w: str(shrink_pairs(w.root)),
            "MIRROR": LazyWorld._mirror,
        }

    def __missing__(self, key: str) -> str:
        self[key] = self.builders[key](self)
        return self[key]

    def _mirror(self) -> str:
        """A loopback mirror serving wiki1m's file (a few hundred bytes: the sum is recorded on first use)."""
        from helpers.http_mirror import serving

        mirror = self.stack.enter_context(serving())
        mirror.files["wiki1m_for_simcse.txt"] = b"".join(f"sentence {i} .\n".encode() for i in range(20))
        return mirror.base

    def close(self) -> None:
        self.stack.close()
