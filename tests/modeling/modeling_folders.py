"""Model folders sentcl did not save, built with the other side's own API: a plain BERT (with or without its
pooler, the layout of the official SimCSE checkpoints) and sentence-transformers folders around it."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from helpers.tiny_bert import write_vocab
from transformers import BertConfig, BertModel, BertTokenizerFast

SENTENCES = [
    "a man is playing a guitar",
    "the stock price falls",
    "a",
    "the big red car is on the road near the house and the dog runs under the tree",
]


def plain_bert(folder: Path, pooler: bool = True, initializer_range: float = 0.02, hidden: int = 32) -> Path:
    """A saved BertModel (add_pooling_layer=pooler); the pooler is 'trained' (far from its init), as in a
    SimCSE checkpoint whose MLP sits in pooler.dense."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizerFast(vocab=str(write_vocab(folder)), do_lower_case=True)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=hidden,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        initializer_range=initializer_range,
    )
    torch.manual_seed(1)
    model = BertModel(config, add_pooling_layer=pooler)
    if pooler:
        torch.nn.init.normal_(model.pooler.dense.weight, std=0.5)
        torch.nn.init.normal_(model.pooler.dense.bias, std=0.5)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def st_folder(
    folder: Path,
    backbone: Path,
    mode: str,
    dense: list[tuple[int, str]],
    normalize: bool,
    max_seq_length: int = 48,
) -> Path:
    """A sentence-transformers folder saved by sentence-transformers itself: Transformer(backbone) ->
    Pooling(mode) -> Dense(out, activation) for each of ``dense`` -> Normalize if asked."""
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", DeprecationWarning
        )  # 6.x moved the classes; `models` reads in 3.x-6.x
        from sentence_transformers import SentenceTransformer, models

        transformer = models.Transformer(str(backbone), max_seq_length=max_seq_length)
        hidden = transformer.auto_model.config.hidden_size
        modules: list[torch.nn.Module] = [transformer, models.Pooling(hidden, pooling_mode=mode)]
        size = hidden
        torch.manual_seed(2)
        for out, act in dense:
            activation = getattr(torch.nn, act)()
            layer = models.Dense(size, out, activation_function=activation)
            torch.nn.init.normal_(layer.linear.weight, std=0.3)
            torch.nn.init.normal_(layer.linear.bias, std=0.3)
            modules.append(layer)
            size = out
        if normalize:
            modules.append(models.Normalize())
        SentenceTransformer(modules=modules, device="cpu").save(str(folder))
    return folder


def st_encode(folder: Path, sentences: list[str], normalize: bool = False):  # noqa: ANN201 - np.ndarray
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    return model.encode(sentences, normalize_embeddings=normalize, convert_to_numpy=True)


def hf_mean_pooled(model, tokenizer, sentences: list[str]):  # noqa: ANN001, ANN201 - transformers objects
    """The reference encode: transformers' ``model`` over the padded batch, mean over the mask by hand (N, H)."""
    import torch

    batch = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state  # (N, L, H)
    mask = batch["attention_mask"].unsqueeze(-1).float()  # (N, L, 1)
    return ((hidden * mask).sum(1) / mask.sum(1)).numpy()  # mean pooling, (N, H)
