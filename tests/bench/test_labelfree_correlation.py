"""bench/labelfree_correlation.py reads every pooler and every layer-dropped copy from one pass with all hidden
states: on the tiny BERT each read equals sentcl's own encoder with that pooler, cut to those layers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.data import write_corpus

from sentcl.modeling.open import load_encoder
from sentcl.modeling.student import keep_layers

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bench_importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))


def test_one_pass_reads_equal_sentcl_encoders(tiny_bert: Path, tmp_path: Path) -> None:
    from bench.labelfree_correlation import hidden_reads, postprocessed

    texts = write_corpus(tmp_path / "c.txt", 30).read_text().splitlines()
    base = load_encoder(str(tiny_bert), pooler="avg")
    reads = [("avg", 2), ("cls", 2), ("avg_first_last", 2), ("avg", 1)]
    got = hidden_reads(base.backbone, base.tokenizer, texts, reads, base.max_length, dropout=False)
    for pooler, layers in reads:
        # the bench's cls is the [CLS] state itself: sentcl's cls_before_pooler (a raw BERT's cls adds a head)
        encoder = load_encoder(str(tiny_bert), pooler="cls_before_pooler" if pooler == "cls" else pooler)
        if layers < 2:
            keep_layers(encoder.backbone, list(range(layers)))
        np.testing.assert_allclose(got[(pooler, layers)], encoder.encode(texts), atol=1e-5, err_msg=pooler)
    arrays = {"plain": got[("avg", 2)], "sts": got[("cls", 2)]}
    np.testing.assert_array_equal(postprocessed(arrays, "first-8")["sts"], got[("cls", 2)][:, :8])
    # fitted on the plain vectors, so their sample covariance is the identity
    whitened = postprocessed(arrays, "whiten-8")["plain"]
    np.testing.assert_allclose(np.cov(whitened, rowvar=False), np.eye(8), atol=1e-6)
