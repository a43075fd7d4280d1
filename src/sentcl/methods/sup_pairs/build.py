"""Supervised pairs (x, x+) without hard negatives (Gao et al. 2021, Table 4 / Table 7)."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from sentcl.config import TrainConfig
from sentcl.data.readers import Corpus
from sentcl.methods.base import Example, Method, check_examples
from sentcl.methods.sup_pairs.options import SupPairsOptions
from sentcl.objectives.infonce import InfoNCE


def is_pair(example: Example) -> bool:
    return isinstance(example, tuple) and len(example) >= 2


def build(cfg: TrainConfig, o: SupPairsOptions, corpus: Corpus, tokenizer: PreTrainedTokenizerBase) -> Method:
    """Gao et al. 2021, Table 4 / Table 7's "no hard negative": supervised pairs (x, x+), no hard negatives.

    InfoNCE (eq. 1) with x+ as the positive and the other examples' x+ as in-batch negatives. Examples are
    two-column pair files (``data.reader=pairs``: QQP, Flickr30k captions, ParaNMT, ...), or the first two
    fields (premise, entailment) of an NLI reader's triples ("entailment only").
    """
    check_examples(corpus, is_pair, "sup_pairs", "(sentence, positive)", "check data.reader")
    return Method(
        views=lambda example: (example[0], example[1]),
        objective=InfoNCE(o.temperature, o.similarity),
        examples=corpus.examples,
    )
