"""Readers by name: a method names the reader that yields its examples (its record's ``reader``, sentcl.config.method_catalogue).

Every reader is ``(path, max_examples) -> Corpus``; ``with_neutral`` (supervised SimCSE's neutral hard
negatives) goes to the NLI readers that group hypotheses by premise.
"""

from __future__ import annotations

from pathlib import Path

from sentcl.data import nli, offline_english, ordered, pairs, scored_pairs
from sentcl.data.readers import Corpus, read_lines
from sentcl.registry import Registry

READERS: Registry[Corpus] = Registry("reader")
READERS.register("lines")(read_lines)
READERS.register("nli_csv")(nli.read_nli_csv)  # neutral hypotheses: a 4th column `neutral`
READERS.register("nli_jsonl")(nli.read_nli_jsonl)
READERS.register("senteval_snli")(nli.read_senteval_snli)  # train_file: the SNLI folder; splits dev + test
READERS.register("ordered_lines")(ordered.read_ordered_lines)
READERS.register("next_sentence")(ordered.read_next_sentence)
READERS.register("pairs")(pairs.read_pairs)  # (x, x+) from .csv / .tsv / .jsonl (SimCSE Table 4)
READERS.register("scored_pairs")(scored_pairs.read_scored_pairs)  # (s1, s2, score): CoSENT
READERS.register("stsb")(scored_pairs.read_stsb_pairs)  # STS Benchmark's TSV layout, scored pairs
# train_file: the data folder ("."); every distinct English sentence outside the STS test sets and STS-B dev
READERS.register("offline_english")(offline_english.read_offline_english)
NEUTRAL_READERS = ("nli_jsonl", "senteval_snli")


def read_training_data(
    reader: str, path: Path, max_examples: int | None = None, with_neutral: bool = False
) -> Corpus:
    """The examples of ``path`` read by ``reader``. The reader and ``with_neutral`` are checked by
    ``sentcl.training.validation.check_data`` (with_neutral needs an NLI reader: nli_csv or a NEUTRAL_READERS one)."""
    read = READERS.get(reader)
    if with_neutral and reader in NEUTRAL_READERS:
        return read(path, max_examples, with_neutral=True)
    return read(path, max_examples)
