"""A tiny random BERT built from a config (no download): 2 layers, 32 wide, a word-piece vocabulary of a few
dozen words and every letter."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

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


def tiny_config(vocab_size: int, layers: int) -> BertConfig:
    """The tiny BERTs' shape: 32 wide, 2 heads, 64 positions, dropout 0.1, ``layers`` layers."""
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )


def build_tiny_bert(folder: Path, seed: int = 0, layers: int = 2) -> Path:
    """A 2-layer (or ``layers``), 32-wide random BERT and a word-piece tokenizer, saved as a plain HF folder."""
    folder.mkdir(parents=True, exist_ok=True)
    # transformers 5 ignores vocab_file= here (the tokenizer silently ends up with 5 tokens); vocab= works
    tokenizer = BertTokenizerFast(vocab=str(write_vocab(folder)), do_lower_case=True)
    assert tokenizer.vocab_size > len(SPECIALS) + len(WORDS), "tiny tokenizer lost its vocabulary"
    config = tiny_config(tokenizer.vocab_size, layers)
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_mlm(
    folder: Path, seed: int = 1, vocab_size: int | None = None, tokenizer_order: str = "same"
) -> Path:
    """A 1-layer, 32-wide random BertForMaskedLM with the tiny BERT's word pieces (a DiffCSE generator), saved
    with its tokenizer; ``vocab_size`` other than the tokenizer's gives a generator whose vocabulary differs
    (saved without a tokenizer); ``tokenizer_order`` 'reversed' saves the same word pieces in another order,
    'none' saves no tokenizer."""
    from transformers import BertForMaskedLM

    folder.mkdir(parents=True, exist_ok=True)
    vocab_file = write_vocab(folder)
    if tokenizer_order == "reversed":
        words = vocab_file.read_text(encoding="utf-8").split()
        vocab_file.write_text("\n".join(words[:5] + words[5:][::-1]) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab=str(vocab_file), do_lower_case=True)
    config = tiny_config(vocab_size or tokenizer.vocab_size, 1)
    torch.manual_seed(seed)
    BertForMaskedLM(config).save_pretrained(folder)
    if vocab_size is None and tokenizer_order != "none":
        tokenizer.save_pretrained(folder)
    else:
        (folder / "vocab.txt").unlink()
    return folder


def tiny_distilbert(layers: int):  # noqa: ANN201 - a DistilBertModel
    """A random DistilBERT of ``layers`` layers, 16 wide, 32 feed-forward neurons, in eval mode."""
    from transformers import DistilBertConfig, DistilBertModel

    config = DistilBertConfig(
        vocab_size=50, dim=16, n_layers=layers, n_heads=2, hidden_dim=32, max_position_embeddings=32
    )
    torch.manual_seed(0)
    return DistilBertModel(config).eval()


def assert_distilbert_reloads(model, folder: Path) -> None:  # noqa: ANN001 - a DistilBertModel
    """``model`` saved to ``folder`` reloads in transformers to the same states."""
    from transformers import DistilBertModel

    model.save_pretrained(folder)
    reloaded = DistilBertModel.from_pretrained(str(folder))
    assert len(reloaded.transformer.layer) == len(model.transformer.layer)
    ids = torch.tensor([[1, 5, 7, 2]])
    torch.testing.assert_close(reloaded(ids).last_hidden_state, model(ids).last_hidden_state)
