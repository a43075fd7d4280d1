"""``sentcl mine`` against sentence-transformers' own ``mine_hard_negatives`` on real SNLI pairs (MiniLM).

160 SNLI dev (premise, entailment) pairs, one positive per anchor, plus an extra corpus of 100 other SNLI
sentences and the texts of 40 of the anchors (so those anchors meet their own text among the candidates).
The reference is ``sentence_transformers.util.mine_hard_negatives`` with the same settings:

- ``--include-anchor-text``: sentence-transformers keeps a corpus text equal to the anchor, so one call over
  all the pairs is the reference for every anchor;
- without it (sentcl's default: the anchor's own text is dropped), the function has no such switch. For an
  anchor whose text is not in the corpus the one call is still the reference; for each of the 40 others the
  reference is a call on that pair alone with the anchor's text taken out of the corpus (its embeddings
  read from the first call through the function's ``cache_folder``, so nothing is encoded again).

Per anchor, the two sets of negatives must be equal (Jaccard 1.0), in the same order.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pytest

from sentcl.cli import main
from sentcl.files.paths import resolve_model_path

st_util = pytest.importorskip("sentence_transformers.util")
datasets = pytest.importorskip("datasets")
pytestmark = pytest.mark.slow
DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "senteval" / "SNLI"
OWN_TEXT = 40  # anchors whose own text is put into the extra corpus


def snli(n_pairs: int, n_extra: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(premise, entailment) pairs with distinct premises, and extra corpus sentences from the test split."""
    if not DATA.is_dir():
        pytest.fail(f"SNLI not found under {DATA} (the shared data folder)")
    s1, s2, labels = (
        (DATA / f"{name}.dev").read_text(encoding="utf-8").splitlines() for name in ("s1", "s2", "labels")
    )
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for a, b, label in zip(s1, s2, labels, strict=True):
        a, b = a.strip(), b.strip()
        if label == "entailment" and a not in seen and b not in seen and a != b:
            pairs.append((a, b))
            seen.update((a, b))
            if len(pairs) == n_pairs:
                break
    extra = []
    for text in (DATA / "s2.test").read_text(encoding="utf-8").splitlines():
        if text.strip() and text.strip() not in seen:
            extra.append(text.strip())
            seen.add(text.strip())
            if len(extra) == n_extra:
                break
    return pairs, extra + [a for a, _ in pairs[:OWN_TEXT]]


def sentcl_negatives(tmp: Path, pairs: list, corpus: list, options: list[str], name: str) -> dict:
    """Run ``sentcl mine`` (the CLI), return {anchor: [negatives in output order]}."""
    pairs_file, corpus_file, out = tmp / "pairs.tsv", tmp / "corpus.txt", tmp / f"{name}.csv"
    pairs_file.write_text("anchor\tpositive\n" + "".join(f"{a}\t{p}\n" for a, p in pairs), encoding="utf-8")
    corpus_file.write_text("".join(t + "\n" for t in corpus), encoding="utf-8")
    argv = ["mine", "--model", "all-MiniLM-L6-v2", "--pairs", str(pairs_file), "--corpus", str(corpus_file)]
    assert main([*argv, "--output", str(out), *options]) == 0
    got: dict[str, list[str]] = {}
    with open(out, encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            got.setdefault(row["sent0"], []).append(row["hard_neg"])
    return got


def st_mine(model, pairs: list, corpus: list, cache: Path, settings: dict) -> dict:  # noqa: ANN001
    """sentence-transformers' mine_hard_negatives as triplets -> {anchor: [negatives in output order]}."""
    data = datasets.Dataset.from_dict({"anchor": [a for a, _ in pairs], "positive": [p for _, p in pairs]})
    out = st_util.mine_hard_negatives(
        data, model, corpus=list(corpus), cache_folder=str(cache), verbose=False, **settings
    )
    got: dict[str, list[str]] = {}
    for row in out:
        got.setdefault(row["anchor"], []).append(row["negative"])
    return got


def cache_embeddings(model, cache: Path, kind: str, texts: list[str], vectors: dict) -> None:  # noqa: ANN001
    """Write the function's own cache file for ``texts`` (its key: model name, prompt, prompt name, texts)."""
    np.save(cache_file(model, cache, kind, texts), np.stack([vectors[t] for t in texts]))


def cache_file(model, cache: Path, kind: str, texts: list[str]) -> Path:  # noqa: ANN001
    """The function's cache file name for ``texts``: a hash of (model name, prompt, prompt name, texts)."""
    key = repr((model.model_card_data.base_model or "", None, None, texts)).encode()
    return cache / f"{kind}_embeddings_{hashlib.sha256(key, usedforsecurity=False).hexdigest()}.npy"


def read_cache(model, cache: Path, kind: str, texts: list[str]) -> np.ndarray:  # noqa: ANN001
    """The function's cached embeddings of ``texts`` (written by its first call)."""
    return np.load(cache_file(model, cache, kind, texts))


@pytest.fixture(scope="module")
def st_model():  # noqa: ANN201
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    return SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu")


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        ([], {}),
        (
            ["--num-negatives", "4", "--range-min", "1", "--relative-margin", "0.05"],
            {"num_negatives": 4, "range_min": 1, "relative_margin": 0.05},
        ),
    ],
    ids=["defaults", "range-min-relative-margin"],
)
def test_mine_equals_sentence_transformers(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    st_model,
    options: list,
    settings: dict,  # noqa: ANN001
) -> None:
    pairs, extra = snli(160, 100)
    cache = tmp_path_factory.getbasetemp() / "st-cache"  # one encode for both settings
    reference = st_mine(st_model, pairs, extra, cache, settings)
    # the function's corpus order (extra corpus, then positives) and its query order (the anchors)
    st_corpus = list(dict.fromkeys(extra + [p for _, p in pairs]))
    anchors = [a for a, _ in pairs]
    vectors = dict(zip(anchors, read_cache(st_model, cache, "query", anchors), strict=True))
    vectors.update(zip(st_corpus, read_cache(st_model, cache, "corpus", st_corpus), strict=True))

    included = sentcl_negatives(tmp_path, pairs, extra, [*options, "--include-anchor-text"], "incl")
    assert set(included) == set(reference) and len(reference) == len(pairs)
    for anchor, negatives in reference.items():
        assert included[anchor] == negatives, anchor
    own = {a for a, _ in pairs[:OWN_TEXT]}
    if not settings:  # with the defaults the own text (cosine 1) is mined; a margin removes it
        assert sum(a in reference[a] for a in own) >= OWN_TEXT // 2

    excluded = sentcl_negatives(tmp_path, pairs, extra, options, "excl")
    assert set(excluded) == set(reference)
    for anchor, positive in pairs:
        expected = reference[anchor]
        if anchor in own:  # the reference: this pair alone, the anchor's text out of the corpus
            corpus = [t for t in st_corpus if t != anchor]  # the other pairs' positives stay candidates
            cache_embeddings(st_model, cache, "query", [anchor], vectors)
            cache_embeddings(st_model, cache, "corpus", list(dict.fromkeys([*corpus, positive])), vectors)
            expected = st_mine(st_model, [(anchor, positive)], corpus, cache, settings)[anchor]
            assert anchor not in expected
        assert excluded[anchor] == expected, anchor
