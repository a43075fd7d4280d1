"""The length-bucketed step equals the padded step: embeddings, loss and every parameter gradient within 1e-5
(dropout off), on a tiny BERT with rows of very different lengths, for every embed_views path; with dropout
on, every row still draws its own mask."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
import torch
from helpers.data import VERY_MIXED_LENGTH_SENTENCES
from helpers.steps import assert_same_step, backward_outputs
from torch import Tensor

from sentcl.data.augment.features import FeatureCutoff
from sentcl.methods import Method, duplicate_view
from sentcl.modeling.bucketing import row_lengths, split_points
from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.infonce import InfoNCE
from sentcl.training.batch_source import make_batch
from sentcl.training.step import embed_views

SENTENCES = VERY_MIXED_LENGTH_SENTENCES
B = len(SENTENCES)


def _model(tiny_bert: Path, dropout: float | None, seed: int = 0) -> SentenceEncoder:
    torch.manual_seed(seed)  # the MLP head's initialisation
    model = SentenceEncoder.from_pretrained(
        str(tiny_bert), pooler="cls", dropout=dropout, train_max_length=48
    )
    model.train()
    return model


def _method(**kwargs: object) -> Method:
    return Method(views=duplicate_view(2), objective=InfoNCE(0.05), examples=SENTENCES, **kwargs)  # type: ignore[arg-type]


def _step(model: torch.nn.Module, method: Method, buckets: int, chunk: int | None = None) -> tuple:
    """(z, loss, gradients) of one step; with ``chunk``, GradCache's chunks (each trimmed to its longest
    row, embed_views per chunk) instead of the whole batch."""
    batch = make_batch(SENTENCES, method, model)  # type: ignore[arg-type]
    views, parts = method.num_views, []
    for start in range(0, B, chunk or B):
        stop = min(start + (chunk or B), B)
        rows = {k: v[start * views : stop * views] for k, v in batch.items()}  # (b·V, L)
        keep = int(row_lengths(rows["attention_mask"]).max())
        rows = {k: v[:, :keep] for k, v in rows.items()}  # (b·V, L_chunk)
        parts.append(embed_views(model, rows, method, stop - start, length_buckets=buckets))  # (b, V, D)
    z = torch.cat(parts)  # (B, V, D)
    loss = method.objective(z)["loss"]
    return backward_outputs(model, z, loss)


class _Widths:
    """Records the (rows, width) of every backbone call: proves the bucketed step really splits and trims."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.shapes: list[tuple[int, int]] = []
        backbones = [m.backbone for m in model.modules() if isinstance(m, SentenceEncoder)]
        for backbone in backbones:
            backbone.register_forward_pre_hook(self._record, with_kwargs=True)

    def _record(self, _module: torch.nn.Module, _args: tuple, kwargs: dict[str, Tensor]) -> None:
        self.shapes.append(tuple(kwargs["attention_mask"].shape))  # type: ignore[arg-type]


def test_lengths_differ_a_lot(tiny_bert: Path) -> None:
    """Guards the fixture: the batch mixes one-word rows with rows several times longer."""
    batch = make_batch(SENTENCES, _method(), _model(tiny_bert, 0.0))
    lengths = row_lengths(batch["attention_mask"])
    assert int(lengths.max()) >= 4 * int(lengths.min())


@pytest.mark.parametrize("buckets", [2, 3, 8])
def test_bucketed_step_equals_padded_step(tiny_bert: Path, buckets: int) -> None:
    model, method = _model(tiny_bert, 0.0), _method()
    padded = _step(model, method, 0)
    widths = _Widths(model)
    assert_same_step(_step(model, method, buckets), padded)
    assert 1 < len(widths.shapes) <= buckets
    assert sum(rows for rows, _ in widths.shapes) == 2 * B
    assert min(width for _, width in widths.shapes) < max(width for _, width in widths.shapes)


def test_per_view_head_activations(tiny_bert: Path) -> None:
    """Views with different head activations (in an order other than the groups') are put back in place."""
    model, method = _model(tiny_bert, 0.0), _method(head_activation=("leaky_relu", "tanh"))
    assert_same_step(_step(model, method, 3), _step(model, method, 0))


def test_feature_augmentation(tiny_bert: Path) -> None:
    """Feature cutoff draws on the padded batch either way: the same generator seed gives the same step."""
    model = _model(tiny_bert, 0.0)
    steps = []
    for buckets in (0, 3):
        cutoff = FeatureCutoff(0.2, generator=7)
        steps.append(_step(model, _method(embedding_augment=(None, cutoff)), buckets))
    assert_same_step(steps[1], steps[0])


def test_shared_dropout_mask(tiny_bert: Path) -> None:
    model, method = _model(tiny_bert, 0.0), _method(share_dropout_mask=True)
    assert_same_step(_step(model, method, 3), _step(model, method, 0))


def test_dual_encoder(tiny_bert: Path) -> None:
    model = DualEncoder(_model(tiny_bert, 0.0, seed=0), _model(tiny_bert, 0.0, seed=1))
    method = _method(head_activation=("tanh", "leaky_relu"), view_encoders=("f", "g"))
    assert_same_step(_step(model, method, 3), _step(model, method, 0))


@pytest.mark.parametrize("chunk", [3, 5])
def test_gradcache_chunks(tiny_bert: Path, chunk: int) -> None:
    """Bucketing inside each GradCache chunk equals the padded whole batch."""
    model, method = _model(tiny_bert, 0.0), _method()
    assert_same_step(_step(model, method, 2, chunk=chunk), _step(model, method, 0))


def test_dropout_stays_independent_per_row(tiny_bert: Path) -> None:
    """With dropout on, the two identical views of every sentence (same length, so the same micro-batch)
    differ: each row draws its own mask."""
    model, method = _model(tiny_bert, None), _method()
    batch = make_batch(SENTENCES, method, model)
    torch.manual_seed(0)
    z = embed_views(model, batch, method, B, length_buckets=3).detach()  # (B, V, D)
    assert (z[:, 0] - z[:, 1]).abs().amax(dim=1).min() > 1e-4
    # without dropout the two views are the same: the difference above is dropout's
    model.eval()
    z_eval = embed_views(model, batch, method, B, length_buckets=3).detach()
    torch.testing.assert_close(z_eval[:, 0], z_eval[:, 1], atol=1e-6, rtol=0)


def _area(lengths: list[int], ends: list[int]) -> int:
    total, start = 0, 0
    for end in ends:
        total += (end - start) * lengths[end - 1]
        start = end
    return total


def test_split_points_least_padding() -> None:
    """The split minimises the padded area over every split into at most K groups (brute force)."""
    rng = random.Random(0)
    for _ in range(200):
        lengths = sorted(rng.randint(1, 12) for _ in range(rng.randint(1, 9)))
        k = rng.randint(1, 4)
        ends = split_points(lengths, k)
        assert ends[-1] == len(lengths) and len(ends) <= k and ends == sorted(set(ends))
        best = min(
            _area(lengths, [*cut, len(lengths)])
            for n in range(k)
            for cut in itertools.combinations(range(1, len(lengths)), n)
        )
        assert _area(lengths, ends) == best
    assert split_points([3, 3, 5, 5, 5, 9, 9, 20], 3) == [5, 7, 8]
    with pytest.raises(ValueError, match="positive"):
        split_points([1, 2], 0)


def test_length_buckets_setting() -> None:
    from sentcl.config import ConfigError, TrainingConfig

    assert TrainingConfig().length_buckets == 0  # off: the default bench/train_vs_st.py supports on CPU
    assert TrainingConfig(length_buckets=4).length_buckets == 4
    with pytest.raises(ConfigError, match="length_buckets"):
        TrainingConfig(length_buckets=-1)
