"""Each pooler against a direct computation on the hidden states, padding masked out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel

from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.pooling import pool


def direct_mean(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = np.zeros((hidden.shape[0], hidden.shape[2]))
    for n in range(hidden.shape[0]):
        tokens = [hidden[n, t] for t in range(hidden.shape[1]) if mask[n, t] == 1]
        out[n] = sum(tokens) / len(tokens)
    return out


@pytest.fixture()
def states() -> tuple[list[torch.Tensor], torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    hidden = [
        torch.randn(3, 5, 4, generator=gen, dtype=torch.float64) for _ in range(4)
    ]  # 3 layers + embeddings
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    return hidden, mask


def test_cls(states) -> None:
    hidden, mask = states
    for name in ("cls", "cls_before_pooler"):
        np.testing.assert_allclose(pool(name, hidden, mask).numpy(), hidden[-1].numpy()[:, 0, :])


def test_avg_respects_mask(states) -> None:
    hidden, mask = states
    np.testing.assert_allclose(
        pool("avg", hidden, mask).numpy(), direct_mean(hidden[-1].numpy(), mask.numpy())
    )
    # padding values must not leak in
    poisoned = [h.clone() for h in hidden]
    poisoned[-1][mask == 0] = 1e6
    np.testing.assert_allclose(
        pool("avg", poisoned, mask).numpy(), direct_mean(hidden[-1].numpy(), mask.numpy())
    )


def test_avg_top2_and_first_last(states) -> None:
    hidden, mask = states
    h = [x.numpy() for x in hidden]
    m = mask.numpy()
    np.testing.assert_allclose(pool("avg_top2", hidden, mask).numpy(), direct_mean((h[-2] + h[-1]) / 2, m))
    # first-last: hidden_states[1] is the first transformer layer (not the embeddings at [0])
    np.testing.assert_allclose(
        pool("avg_first_last", hidden, mask).numpy(), direct_mean((h[1] + h[-1]) / 2, m)
    )


@pytest.mark.parametrize("pooler", ["cls_before_pooler", "avg", "avg_top2", "avg_first_last"])
def test_encoder_poolers_against_plain_automodel(tiny_bert: Path, pooler: str) -> None:
    sentences = ["a dog runs", "the old man is reading a book near the river", "music"]
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler=pooler).eval()
    got = model.encode(sentences)
    plain = AutoModel.from_pretrained(str(tiny_bert)).eval()
    batch = model.tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hs = [x.numpy() for x in plain(**batch, output_hidden_states=True).hidden_states]
    m = batch["attention_mask"].numpy()
    expected = {
        "cls_before_pooler": hs[-1][:, 0],
        "avg": direct_mean(hs[-1], m),
        "avg_top2": direct_mean((hs[-2] + hs[-1]) / 2, m),
        "avg_first_last": direct_mean((hs[1] + hs[-1]) / 2, m),
    }[pooler]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_cls_head_in_training_and_mlp_only_train(tiny_bert: Path) -> None:
    sentences = ["a dog runs", "a cat sits on the road"]
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", dropout=0.0)
    batch = model.tokenize(sentences)
    cls = model.backbone(**batch).last_hidden_state[:, 0]
    w, b = model.head.dense.weight, model.head.dense.bias
    with_head = torch.tanh(cls @ w.T + b)
    model.train()
    torch.testing.assert_close(model(**batch), with_head)
    leaky = torch.nn.functional.leaky_relu(cls @ w.T + b)
    torch.testing.assert_close(model(**batch, head_activation="leaky_relu"), leaky)
    model.eval()
    torch.testing.assert_close(model(**batch), with_head)  # cls keeps its head at inference
    model.mlp_only_train = True
    torch.testing.assert_close(model(**batch), cls)  # ... unless it is used only in training


def test_encode_keeps_input_order(tiny_bert: Path) -> None:
    sentences = ["a", "the big red car is on the road near the house", "a dog", "music is playing"] * 3
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    together = model.encode(sentences, batch_size=5)
    one_by_one = np.stack([model.encode([s])[0] for s in sentences])
    np.testing.assert_allclose(together, one_by_one, rtol=1e-5, atol=1e-6)
    normalized = model.encode(sentences, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(normalized, axis=1), 1.0, rtol=1e-6)
    sims = model.similarity(sentences[:2], sentences[2:4])
    a, b = together[:2], together[2:4]
    direct = (a @ b.T) / np.outer(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(sims, direct, rtol=1e-5, atol=1e-6)


def test_encode_does_not_truncate_at_the_training_length(tiny_bert: Path) -> None:
    """SimCSE's evaluation encodes whole sentences; max_length only truncates training batches."""
    sentence = "the old man is reading a book near the river and the young woman plays a song on the piano"
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg", train_max_length=4)
    assert len(model.tokenizer(sentence)["input_ids"]) > 4
    plain = AutoModel.from_pretrained(str(tiny_bert)).eval()
    batch = model.tokenizer([sentence], return_tensors="pt")
    with torch.no_grad():
        expected = plain(**batch).last_hidden_state.mean(dim=1).numpy()
    np.testing.assert_allclose(model.encode([sentence]), expected, rtol=1e-5, atol=1e-6)
    assert model.tokenize([sentence])["input_ids"].shape[1] == 4  # training batches are truncated
    truncated = model.encode([sentence], max_length=4)
    assert not np.allclose(truncated, expected, atol=1e-3)
