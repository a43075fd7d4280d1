"""Shared fixtures: a tiny random BERT built from a config (no download) and the data folder."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

from sentcl.paths import resolve_data_dir

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "a the man woman child dog cat horse bird car road house city river tree garden music guitar piano song "
    "is are was plays playing rides riding eats eating runs running walks walking sits sitting reads reading "
    "big small red green blue old young happy sad fast slow on in at with near under over and of to "
    "market stock price rises falls company bank news report said year day night morning team game wins"
).split()
# Also cover the letters so that any STS word tokenizes into known word pieces instead of [UNK] only.
LETTERS = list("abcdefghijklmnopqrstuvwxyz0123456789.,'\"-")


def write_vocab(folder: Path) -> Path:
    vocab = (
        SPECIALS + sorted(set(WORDS)) + [c for c in LETTERS if c not in WORDS] + [f"##{c}" for c in LETTERS]
    )
    path = folder / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return path


def build_tiny_bert(folder: Path, seed: int = 0) -> Path:
    """A 2-layer, 32-wide random BERT and a word-piece tokenizer, saved as a plain HF folder."""
    folder.mkdir(parents=True, exist_ok=True)
    # transformers 5 ignores vocab_file= here (the tokenizer silently ends up with 5 tokens); vocab= works
    tokenizer = BertTokenizerFast(vocab=str(write_vocab(folder)), do_lower_case=True)
    assert tokenizer.vocab_size > len(SPECIALS) + len(WORDS), "tiny tokenizer lost its vocabulary"
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


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


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real data folder ($SENTCL_DATA or ../shared/data): always present in development and CI."""
    return resolve_data_dir()


@pytest.fixture()
def corpus_file(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus.txt", 40)


# ---- the service's tests (tests/serve/): the tiny encoder and an index saved by ``sentcl search --index``
# (here, not in a tests/serve/conftest.py: a second module named conftest would shadow this one for the
# tests that import its helpers)

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


@pytest.fixture(scope="session")
def tiny_encoder(tiny_bert: Path) -> Any:
    from sentcl.modeling.open import load_encoder

    return load_encoder(str(tiny_bert), pooler="avg")


@pytest.fixture(scope="session")
def index_dir(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index folder built the way ``sentcl search --index DIR`` builds it (same pooler as tiny_encoder)."""
    from sentcl.search_cli import run_search

    folder = tmp_path_factory.mktemp("serve_index")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(SERVE_CORPUS) + "\n", encoding="utf-8")
    run_search(str(tiny_bert), corpus, ["a dog"], k=1, index_dir=folder / "index", pooler="avg")
    return folder / "index"


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


def backward_outputs(model: torch.nn.Module, z: torch.Tensor, loss: torch.Tensor) -> tuple:
    """(z detached, loss, every parameter's gradient) after ``loss.backward()``; the gradients are cleared."""
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return z.detach(), float(loss.detach()), grads


def assert_same_step(a: tuple, b: tuple) -> None:
    """Two ``backward_outputs``: embeddings, loss and every gradient within 1e-5."""
    torch.testing.assert_close(a[0], b[0], atol=1e-5, rtol=0)
    assert abs(a[1] - b[1]) < 1e-5
    assert a[2].keys() == b[2].keys() and len(a[2]) > 10
    for name in a[2]:
        torch.testing.assert_close(a[2][name], b[2][name], atol=1e-5, rtol=0, msg=f"gradient of {name}")
