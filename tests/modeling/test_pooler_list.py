"""One pooler table (sentcl.config.poolers, with its functions in sentcl.modeling.pooling) read by config, CLI, encoder and loader; one encode_fn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sentcl.config.poolers as poolers
import sentcl.config.sections as config
from sentcl.cli.options import POOLERS as CLI_POOLERS
from sentcl.modeling import encode_fn, sentcl_json
from sentcl.modeling.packed import PACKED_POOLERS
from sentcl.modeling.pooling import HEADLESS_POOLERS, NEEDS_ALL_LAYERS, POOLER_SPECS, POOLERS


def test_every_reader_of_the_list_is_the_same_object() -> None:
    assert config.POOLERS is POOLERS and CLI_POOLERS is POOLERS and sentcl_json.POOLERS is POOLERS
    assert POOLERS[:5] == ("cls", "cls_before_pooler", "avg", "avg_top2", "avg_first_last")
    assert [p for p in POOLERS if POOLER_SPECS[p].head] == ["cls"]
    assert "cls" not in HEADLESS_POOLERS and {"cls_before_pooler", "avg"} <= set(HEADLESS_POOLERS)
    assert {"avg_top2", "avg_first_last"} == NEEDS_ALL_LAYERS
    assert (
        POOLERS is poolers.POOLERS and HEADLESS_POOLERS is poolers.HEADLESS_POOLERS
    )  # the torch-free table's


def test_the_pooling_module_and_the_packed_forward_read_the_one_table() -> None:
    """The facts the modeling side once kept in its own tables, now derived from sentcl.config.poolers: compared with
    the values those tables held (PACKED_POOLERS was a literal set, the heads and layers literal flags)."""
    assert {"avg", "cls", "cls_before_pooler"} == PACKED_POOLERS
    assert {n for n, s in POOLER_SPECS.items() if s.prompt} == {"mask"}
    assert {n: s.fn.__name__ for n, s in POOLER_SPECS.items()} == {
        "cls": "pool_cls",
        "cls_before_pooler": "pool_cls",
        "avg": "pool_avg",
        "avg_top2": "pool_avg_top2",
        "avg_first_last": "pool_avg_first_last",
        "mask": "pool_mask",
    }


def test_config_rejects_a_pooler_not_in_the_list() -> None:
    with pytest.raises(config.ConfigError, match="model.pooler='max'"):
        config.ModelConfig(pooler="max")


class Recorder:
    """Stands in for an encoder: records the keyword arguments encode gets."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def encode(self, sentences: list[str], **kwargs: object) -> np.ndarray:
        self.calls.append(kwargs)
        return np.ones((len(sentences), 2))


def test_encode_fn_passes_batch_size_and_length_only_when_given(tiny_bert: Path) -> None:
    model = Recorder()
    assert encode_fn(model, 7)(["a", "b"]).shape == (2, 2)
    encode_fn(model, 3, max_length=16)(["a"])
    assert model.calls == [{"batch_size": 7}, {"batch_size": 3, "max_length": 16}]
    from sentcl.modeling import SentenceEncoder

    encoder = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    sentences = ["a man plays guitar", "the dog"]
    np.testing.assert_array_equal(encode_fn(encoder, 1)(sentences), encoder.encode(sentences, batch_size=1))
