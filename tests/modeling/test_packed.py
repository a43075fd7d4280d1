"""The packed-token step equals the padded step: embeddings, loss and every parameter gradient within 1e-5
(dropout off), on a tiny BERT with rows of very different lengths; with dropout on, identical rows differ;
unsupported poolers and architectures run the padded forward."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from helpers.data import VERY_MIXED_LENGTH_SENTENCES
from helpers.steps import assert_same_step, backward_outputs
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import RobertaConfig, RobertaModel

from sentcl.config import TrainingConfig
from sentcl.methods import Method, duplicate_view
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.packed import packed_encode, supports
from sentcl.objectives.infonce import InfoNCE
from sentcl.training.batch_source import make_batch
from sentcl.training.step import embed_views, forward_loss

SENTENCES = VERY_MIXED_LENGTH_SENTENCES
B = len(SENTENCES)


def _model(tiny_bert: Path, pooler: str, dropout: float | None) -> SentenceEncoder:
    torch.manual_seed(0)  # the MLP head's initialisation
    model = SentenceEncoder.from_pretrained(
        str(tiny_bert), pooler=pooler, dropout=dropout, train_max_length=48
    )
    model.train()
    return model


def _method(**kwargs: object) -> Method:
    return Method(views=duplicate_view(2), objective=InfoNCE(0.05), examples=SENTENCES, **kwargs)  # type: ignore[arg-type]


class _BackboneCalls:
    """Counts calls of the backbone's own forward: 0 when the packed path ran."""

    def __init__(self, model: SentenceEncoder) -> None:
        self.count = 0
        model.backbone.register_forward_pre_hook(lambda *_: setattr(self, "count", self.count + 1))


def _step(model: SentenceEncoder, method: Method, packed: bool, cut: bool = False) -> tuple:
    batch = make_batch(SENTENCES, method, model)  # (B·V, L)
    if cut:  # a token cut off inside a row: a query still, never a key nor part of the mean
        batch["attention_mask"] = batch["attention_mask"].clone()
        batch["attention_mask"][2 * 1, 3] = 0
        batch["attention_mask"][2 * 3 + 1, 5] = 0
    z = embed_views(model, batch, method, B, packed_tokens=packed)  # (B, V, D)
    loss = method.objective(z)["loss"]
    return backward_outputs(model, z, loss)


@pytest.mark.parametrize(
    ("pooler", "acts", "cut"),
    [
        ("cls", None, False),
        ("avg", None, True),
        ("cls_before_pooler", None, True),
        ("cls", ("tanh", "leaky_relu"), False),
    ],
)
def test_packed_equals_padded(tiny_bert: Path, pooler: str, acts: tuple[str, ...] | None, cut: bool) -> None:
    model = _model(tiny_bert, pooler, dropout=0.0)
    method = _method(head_activation=acts) if acts else _method()
    calls = _BackboneCalls(model)
    packed = _step(model, method, packed=True, cut=cut)
    assert calls.count == 0  # the packed forward ran, not the backbone's padded one
    padded = _step(model, method, packed=False, cut=cut)
    assert calls.count == 1
    assert_same_step(packed, padded)
    assert packed[0].std() > 0.01  # not a degenerate embedding


def test_packed_with_inputs_embeds_and_token_types(tiny_bert: Path) -> None:
    model = _model(tiny_bert, "avg", dropout=0.0)
    batch = model.tokenize(SENTENCES)
    batch["token_type_ids"] = (torch.arange(batch["input_ids"].size(1)) % 2).expand_as(batch["input_ids"])
    embeds = model.backbone.embeddings.word_embeddings(batch["input_ids"]) * 1.5  # (N, L, H)
    rows = {k: v for k, v in batch.items() if k != "input_ids"}
    torch.testing.assert_close(
        packed_encode(model, inputs_embeds=embeds, **rows),
        model(inputs_embeds=embeds, **rows),
        atol=1e-5,
        rtol=0,
    )


def test_dropout_on_identical_rows_differ(tiny_bert: Path) -> None:
    model = _model(tiny_bert, "avg", dropout=0.1)
    method = _method()
    batch = make_batch(SENTENCES, method, model)
    z = embed_views(model, batch, method, B, packed_tokens=True)  # (B, V, D): views 0 and 1 are equal rows
    assert (z[:, 0] - z[:, 1]).abs().amax(dim=1).min() > 1e-4  # every pair differs
    model.eval()  # dropout off at eval: the packed forward matches the padded one again
    with torch.no_grad():
        torch.testing.assert_close(
            embed_views(model, batch, method, B, packed_tokens=True),
            embed_views(model, batch, method, B),
            atol=1e-5,
            rtol=0,
        )


def test_unsupported_pooler_falls_back_to_padded(tiny_bert: Path) -> None:
    model = _model(tiny_bert, "avg_top2", dropout=0.0)
    assert not supports(model)
    calls = _BackboneCalls(model)
    method = _method()
    assert_same_step(_step(model, method, packed=True), _step(model, method, packed=False))
    assert calls.count == 2  # both steps ran the backbone's padded forward


def test_unsupported_architecture_falls_back_to_padded(tiny_bert: Path) -> None:
    bert = _model(tiny_bert, "avg", dropout=0.0)
    assert supports(bert)
    config = RobertaConfig(
        vocab_size=bert.tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=80, pad_token_id=0, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    model = SentenceEncoder(RobertaModel(config), bert.tokenizer, pooler="avg", train_max_length=48)
    assert not supports(model)
    calls = _BackboneCalls(model)
    method = _method()
    assert_same_step(_step(model, method, packed=True), _step(model, method, packed=False))
    assert calls.count == 2


def test_forward_loss_and_default(tiny_bert: Path) -> None:
    """The loop's step (plain and GradCache) with packed tokens equals the padded one; on by default."""
    assert TrainingConfig().packed_tokens is True
    model = _model(tiny_bert, "cls", dropout=0.0)
    method = _method()
    batch = make_batch(SENTENCES, method, model)
    for chunk in (None, 4):
        losses, grads = [], []
        for packed in (True, False):
            out = forward_loss(model, batch, method, B, chunk_size=chunk, packed_tokens=packed)
            losses.append(float(out["loss"]))
            grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))
            model.zero_grad(set_to_none=True)
        assert abs(losses[0] - losses[1]) < 1e-5
        torch.testing.assert_close(grads[0], grads[1], atol=1e-5, rtol=0)


def test_packed_two_encoders_equal_padded(tiny_bert: Path) -> None:
    """A DualEncoder: each view through the encoder the method names, each packed; equal to the padded embed_views."""
    from sentcl.modeling.dual import DualEncoder

    f, g = _model(tiny_bert, "cls", 0.0), _model(tiny_bert, "avg", 0.0)
    torch.nn.init.normal_(g.backbone.encoder.layer[0].output.dense.weight)  # two different encoders
    model = DualEncoder(f, g)
    method = _method(head_activation=("tanh", "leaky_relu"), view_encoders=("f", "g"))
    batch = make_batch(SENTENCES, method, f)
    packed = embed_views(model, batch, method, B, packed_tokens=True)  # (B, V, D)
    torch.testing.assert_close(packed, embed_views(model, batch, method, B), atol=1e-5, rtol=0)


def test_inference_reuses_the_fused_projection_until_a_weight_changes(tiny_bert: Path) -> None:
    """The kept Q/K/V concatenation gives the padded forward's output, and an in-place weight update (an
    optimiser step) is seen at once: the result equals a fresh model's with the same weights."""
    model = _model(tiny_bert, "avg", dropout=0.0).eval()
    batch = model.tokenize(SENTENCES)
    with torch.inference_mode():
        first = packed_encode(model, **batch)
        torch.testing.assert_close(first, packed_encode(model, **batch), atol=0, rtol=0)
        torch.testing.assert_close(first, model(**batch), atol=1e-5, rtol=0)
    with torch.no_grad():
        model.backbone.encoder.layer[0].attention.self.value.weight.mul_(3.0)
    with torch.inference_mode():
        changed = packed_encode(model, **batch)
        assert (changed - first).abs().max() > 1e-3
        torch.testing.assert_close(changed, model(**batch), atol=1e-5, rtol=0)


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.integers(1, 40), min_size=1, max_size=12), pooler=st.sampled_from(["avg", "cls"]))
def test_attention_groups_follow_the_padding_rule_and_equal_padded(
    tiny_bert: Path, lengths: list[int], pooler: str
) -> None:
    """Generated row lengths: every token is in exactly one attention group, each group pads at most a
    quarter of its real tokens (the rows' own lengths, counted here by hand), and the packed embeddings equal
    the padded forward's."""
    from sentcl.modeling.packed import _layout

    model = _model(tiny_bert, pooler, None)
    model.eval()
    width = max(lengths)
    gen = torch.Generator().manual_seed(sum(lengths))
    input_ids = torch.randint(5, 100, (len(lengths), width), generator=gen)  # (N, L)
    mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).long()  # (N, L)
    rows, cols, groups = _layout(mask)
    assert sorted(zip(rows.tolist(), cols.tolist(), strict=True)) == [
        (r, c) for r, n in enumerate(lengths) for c in range(n)
    ]
    assert [g.start for g in groups] == [0] + [g.end for g in groups[:-1]] and groups[-1].end == sum(lengths)
    for g in groups:
        members = sorted({int(r) for r in rows[g.start : g.end]})
        real = sum(lengths[r] for r in members)
        cells = len(members) * max(lengths[r] for r in members)
        assert g.key_mask.shape == (len(members), max(lengths[r] for r in members))
        assert cells - real <= 0.25 * real or len(members) == 1
    with torch.inference_mode():
        packed = packed_encode(model, attention_mask=mask, input_ids=input_ids)  # (N, D)
        padded = model(attention_mask=mask, input_ids=input_ids)  # (N, D)
    torch.testing.assert_close(packed, padded, atol=1e-5, rtol=0)


def test_attention_groups_named_example() -> None:
    """Rows of 3, 30, 4 and 28 tokens: two groups, the long rows [30, 28] and the short ones [4, 3]."""
    from sentcl.modeling.packed import _layout

    mask = (torch.arange(30)[None, :] < torch.tensor([3, 30, 4, 28])[:, None]).long()  # (4, 30)
    rows, _, groups = _layout(mask)
    assert [sorted(set(rows[g.start : g.end].tolist())) for g in groups] == [[1, 3], [0, 2]]
    assert [tuple(g.key_mask.shape) for g in groups] == [(2, 30), (2, 4)]
