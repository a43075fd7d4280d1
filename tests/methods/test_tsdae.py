"""TSDAE: the decoder's loss equals a hand-written forward of a BERT decoder (causal self-attention, cross-attention
to the sentence vector alone, the tied LM head) to 1e-6; the deletion keeps exactly round(0.4 n) of a sentence's
tokens; a few steps on the tiny BERT save an encoder that transformers and sentence-transformers load without the
decoder; a start model with no decoder layout is one line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModel, DistilBertConfig, DistilBertModel

import sentcl
from sentcl.cli import main
from sentcl.config import TrainConfig, load_config
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.methods.views import SENTENCE_IDS, SENTENCE_MASK, trim_tokens
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.training.batch_source import augment_tokens, make_batch

SENTENCES = [
    "a man plays a guitar in the garden",
    "the dog runs",
    "stock prices fall",
    "a cat sits on a red car",
]


def _layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def _gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _attention(
    query: torch.Tensor, keys: torch.Tensor, w: dict, prefix: str, heads: int, allowed
) -> torch.Tensor:
    """One attention block for one row, written per head and position: query (Lq, H), keys (Lk, H)."""
    q = query @ w[f"{prefix}.self.query.weight"].T + w[f"{prefix}.self.query.bias"]
    k = keys @ w[f"{prefix}.self.key.weight"].T + w[f"{prefix}.self.key.bias"]
    v = keys @ w[f"{prefix}.self.value.weight"].T + w[f"{prefix}.self.value.bias"]
    size = q.shape[1] // heads
    out = torch.zeros_like(q)
    for head in range(heads):
        cols = slice(head * size, (head + 1) * size)
        for i in range(q.shape[0]):
            js = [j for j in range(k.shape[0]) if allowed(i, j)]
            scores = torch.stack([q[i, cols] @ k[j, cols] / math.sqrt(size) for j in js])
            weights = torch.softmax(scores, dim=0)
            out[i, cols] = sum(weights[n] * v[j, cols] for n, j in enumerate(js))
    return out @ w[f"{prefix}.output.dense.weight"].T + w[f"{prefix}.output.dense.bias"]


def reference_loss(w: dict, config, h: torch.Tensor, ids: torch.Tensor, mask: torch.Tensor) -> float:
    """-mean over every real target token of log p(x_t | x_<t, h), the decoder's forward written by hand."""
    eps, heads = config.layer_norm_eps, config.num_attention_heads
    word = w["bert.embeddings.word_embeddings.weight"]
    total, count = 0.0, 0
    for b in range(ids.shape[0]):
        n = int(mask[b].sum())
        inputs, targets = ids[b, : n - 1], ids[b, 1:n]
        length = inputs.shape[0]
        x = word[inputs] + w["bert.embeddings.position_embeddings.weight"][:length]
        x = x + w["bert.embeddings.token_type_embeddings.weight"][0]
        x = _layer_norm(x, w["bert.embeddings.LayerNorm.weight"], w["bert.embeddings.LayerNorm.bias"], eps)
        memory = h[b : b + 1]  # (1, H): the sentence vector is the whole memory
        for layer in range(config.num_hidden_layers):
            p = f"bert.encoder.layer.{layer}"
            a = _attention(x, x, w, f"{p}.attention", heads, lambda i, j: j <= i)  # causal
            x = _layer_norm(
                a + x,
                w[f"{p}.attention.output.LayerNorm.weight"],
                w[f"{p}.attention.output.LayerNorm.bias"],
                eps,
            )
            c = _attention(x, memory, w, f"{p}.crossattention", heads, lambda i, j: True)
            x = _layer_norm(
                c + x,
                w[f"{p}.crossattention.output.LayerNorm.weight"],
                w[f"{p}.crossattention.output.LayerNorm.bias"],
                eps,
            )
            f = _gelu(x @ w[f"{p}.intermediate.dense.weight"].T + w[f"{p}.intermediate.dense.bias"])
            f = f @ w[f"{p}.output.dense.weight"].T + w[f"{p}.output.dense.bias"]
            x = _layer_norm(f + x, w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps)
        t = _gelu(
            x @ w["cls.predictions.transform.dense.weight"].T + w["cls.predictions.transform.dense.bias"]
        )
        t = _layer_norm(
            t,
            w["cls.predictions.transform.LayerNorm.weight"],
            w["cls.predictions.transform.LayerNorm.bias"],
            eps,
        )
        logits = t @ word.T + w["cls.predictions.bias"]  # the LM head's weight is the word embeddings
        for position in range(length):
            total -= float(torch.log_softmax(logits[position], dim=0)[targets[position]])
            count += 1
    return total / count


def _setup(tiny_bert: Path, *extra: str):
    cfg = load_config(TrainConfig, None, [f"model.name_or_path={tiny_bert}", "objective.name=tsdae", *extra])
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler=cfg.model.pooler, dropout=0.1)
    method = build_method(cfg, Corpus(Path("x"), SENTENCES), model.tokenizer)
    modules = method.objective.attach(model)
    return cfg, model, method, modules["decoder"]


def test_loss_equals_a_hand_written_decoder(tiny_bert: Path) -> None:
    _, model, method, decoder = _setup(tiny_bert)
    assert model.pooler == "cls_before_pooler" and model.head is None  # a raw encoder: the paper's [CLS]
    # the decoder starts from the encoder, its embeddings and LM head are the encoder's word embeddings
    word = model.backbone.get_input_embeddings().weight
    assert decoder.get_input_embeddings().weight is word and decoder.get_output_embeddings().weight is word
    layer = "encoder.layer.1.output.dense.weight"
    assert torch.equal(decoder.base_model.state_dict()[layer], model.backbone.state_dict()[layer])
    assert decoder.base_model.get_parameter(layer) is not model.backbone.get_parameter(
        layer
    )  # a copy, not tied
    decoder.double().eval()  # in float64, no dropout: the reference is exact
    meta = method.meta(SENTENCES)
    h = torch.randn(len(SENTENCES), 32, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    got = float(method.objective(h.unsqueeze(1), **meta)["loss"].detach())  # (B, 1, H): one view
    ids, mask = trim_tokens(meta[SENTENCE_IDS], meta[SENTENCE_MASK])
    weights = {k: v.double() for k, v in decoder.state_dict().items()}
    want = reference_loss(weights, decoder.config, h, ids, mask)
    assert abs(got - want) < 1e-6, (got, want)
    # the gradient reaches the sentence vector: it is the decoder's only view of the sentence
    h.requires_grad_(True)
    method.objective(h.unsqueeze(1), **meta)["loss"].backward()
    assert h.grad is not None and float(h.grad.abs().sum()) > 0


def test_deletion_keeps_two_fifths_of_the_tokens(tiny_bert: Path) -> None:
    _, model, method, _ = _setup(tiny_bert)
    batch = make_batch(SENTENCES, method, model)
    method.reseed(42, 0)
    damaged = augment_tokens(batch, method, len(SENTENCES))
    for row, (ids, kept) in enumerate(zip(batch["attention_mask"], damaged["attention_mask"], strict=True)):
        n = int(ids.sum()) - 2  # real tokens, [CLS] and [SEP] aside
        assert int(kept.sum()) - 2 == n - min(math.floor(0.6 * n + 0.5), n - 1), row
        assert damaged["input_ids"][row, 0] == batch["input_ids"][row, 0]  # [CLS] stays
    assert torch.equal(
        method.meta(SENTENCES)[SENTENCE_IDS][:, : batch["input_ids"].shape[1]], batch["input_ids"]
    )


def test_trains_and_saves_the_encoder_alone(tiny_bert: Path, corpus_file: Path, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "run"
    cfg = load_config(
        TrainConfig,
        None,
        [
            f"model.name_or_path={tiny_bert}",
            "objective.name=tsdae",
            f"data.train_file={corpus_file}",
            f"training.output_dir={out}",
            "training.batch_size=8",
            "training.max_steps=3",
            "training.eval_steps=0",
            "training.save_steps=0",
            "training.log_steps=1",
            "training.progress=false",
            "eval.final_tasks=[]",
            "eval.compare_with_start=false",
        ],
    )
    sentcl.train(cfg)
    folder = out / "best"
    state = torch.load(next(out.glob("checkpoint-*")) / "training_state.pt", weights_only=True)
    assert "crossattention" in str(state)  # the decoder is kept for resuming, beside the encoder
    hf, info = AutoModel.from_pretrained(folder, output_loading_info=True)
    assert not info["missing_keys"] and not any("crossattention" in k for k in hf.state_dict())
    start = AutoModel.from_pretrained(tiny_bert)
    assert not torch.equal(
        hf.encoder.layer[0].output.dense.weight, start.encoder.layer[0].output.dense.weight
    )
    ours = sentcl.open_model(str(folder)).encode(SENTENCES)
    theirs = SentenceTransformer(str(folder), device="cpu").encode(SENTENCES)
    assert abs(ours - theirs).max() < 1e-5  # [CLS] without a head, as the folder says


def test_a_start_model_without_a_decoder_layout_is_one_line(
    tmp_path: Path, tiny_bert: Path, corpus_file: Path, capsys
) -> None:
    folder = tmp_path / "distilbert"
    from transformers import AutoTokenizer

    vocab = len(AutoTokenizer.from_pretrained(tiny_bert))  # every token id has a row (checked at open)
    config = DistilBertConfig(
        vocab_size=vocab, dim=32, n_layers=1, n_heads=2, hidden_dim=64, max_position_embeddings=64
    )
    DistilBertModel(config).save_pretrained(folder)
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"):
        if (tiny_bert / name).is_file():
            (folder / name).write_bytes((tiny_bert / name).read_bytes())
    settings = [
        f"model.name_or_path={folder}",
        "objective.name=tsdae",
        "model.pooler=avg",
        f"data.train_file={corpus_file}",
        f"training.output_dir={tmp_path / 'run'}",
        "training.max_steps=1",
        "training.batch_size=4",
        "eval.final_tasks=[]",
    ]
    capsys.readouterr()  # the folder's writing, before the command
    code = main(["train", *[part for s in settings for part in ("--set", s)]])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "has no decoder-compatible layout" in err[0] and "distilbert" in err[0]


def test_pooler_cls_with_its_head_is_refused(tiny_bert: Path) -> None:
    from sentcl.config import ConfigError
    from sentcl.training.validation import validate

    cfg = load_config(
        TrainConfig, None, [f"model.name_or_path={tiny_bert}", "objective.name=tsdae", "model.pooler=cls"]
    )
    with pytest.raises(ConfigError, match="cls_before_pooler"):
        validate(cfg, environment=False)
