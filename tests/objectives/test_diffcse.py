"""DiffCSE's conditional replaced-token detection on tiny random models: L_RTD against the binary cross-entropy
written out by hand, ELECTRA's replaced labels, the conditioning on h, the gradient into the encoder through h,
and GradCache's chunked step against the plain one."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch import Tensor, nn

from sentcl.methods import Method, duplicate_view
from sentcl.methods.diffcse.generator import ConditionedDiscriminator, build_discriminator, load_generator
from sentcl.methods.diffcse.loss import DiffCSEObjective, RTDTerm
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.infonce import InfoNCE
from sentcl.training.step import forward_loss

SENTENCES = ["a man plays a guitar", "the dog runs near the river", "stock price falls", "a red car"]


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.tiny_bert import build_tiny_mlm

    return build_tiny_mlm(tmp_path_factory.mktemp("tiny_mlm"))


@pytest.fixture()
def encoder(tiny_bert: Path) -> SentenceEncoder:
    torch.manual_seed(0)
    return SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", mlp_only_train=True)


def views_batch(encoder: SentenceEncoder) -> dict[str, Tensor]:
    """(B·2, L) example-major rows: each sentence twice (SimCSE's views), padded."""
    rows = [s for s in SENTENCES for _ in range(2)]
    return dict(encoder.tokenizer(rows, padding=True, return_tensors="pt"))


class FixedGenerator(nn.Module):
    """A stand-in G whose logits put ``mass`` on one token per position (``pick(ids)``), recording its input."""

    def __init__(self, vocab: int, pick: object, mass: float = 50.0) -> None:
        super().__init__()
        self.vocab, self.pick, self.mass = vocab, pick, mass
        self.seen: list[Tensor] = []

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> SimpleNamespace:
        self.seen.append(input_ids.clone())
        chosen = self.pick(input_ids)  # type: ignore[operator]  # (N, L)
        logits = torch.zeros(*input_ids.shape, self.vocab)  # (N, L, V)
        logits.scatter_(-1, chosen.unsqueeze(-1), self.mass)
        return SimpleNamespace(logits=logits)


def objective_with(generator: nn.Module, encoder: SentenceEncoder, **options: object) -> DiffCSEObjective:
    objective = DiffCSEObjective(InfoNCE(0.05), generator, **options)  # type: ignore[arg-type]
    objective.attach(encoder)
    return objective


def test_a_generator_folder_without_a_tokenizer_is_checked_by_its_size(tmp_path, encoder) -> None:
    from helpers.tiny_bert import build_tiny_mlm

    folder = build_tiny_mlm(tmp_path / "gen", tokenizer_order="none")
    assert not (folder / "vocab.txt").exists() and not (folder / "tokenizer.json").exists()
    generator = load_generator(str(folder), encoder.tokenizer)
    assert generator.config.vocab_size == len(encoder.tokenizer) and not generator.training
    assert all(not p.requires_grad for p in generator.parameters())


def test_rtd_loss_is_the_binary_cross_entropy_over_the_real_tokens(encoder, tiny_mlm) -> None:
    objective = objective_with(load_generator(str(tiny_mlm), encoder.tokenizer), encoder)
    batch = views_batch(encoder)
    term = objective.token_loss(batch, seed=7)
    rows, mask = term.rows, batch["attention_mask"]
    assert bool((mask == 0).any()), "the fixture has padding, which must not count"
    torch.manual_seed(1)
    h = torch.randn(mask.size(0), 32)
    disc = term.discriminator.eval()
    with torch.no_grad():
        loss = float(term(rows, h))
        logits = disc(rows["input_ids"], mask, h, rows["token_type_ids"])  # (N, L, 2)
    total, count = 0.0, 0
    for n in range(mask.size(0)):
        for t in range(mask.size(1)):
            if mask[n, t] == 0:
                continue
            y = int(rows["labels"][n, t])
            p = 1.0 / (1.0 + math.exp(-(float(logits[n, t, 1]) - float(logits[n, t, 0]))))  # P(replaced)
            total += -(y * math.log(p) + (1 - y) * math.log(1.0 - p))
            count += 1
    assert loss == pytest.approx(total / count, rel=1e-5)
    # the authors' form: every padded position counted, padding labelled "original"
    padded = objective_with(objective._frozen[0], encoder, rtd_positions="padded").token_loss(batch, seed=7)
    padded.discriminator.load_state_dict(disc.state_dict())
    padded.discriminator.eval()
    assert torch.equal(padded.rows["labels"], rows["labels"])  # the same masks and x'' (same seed)
    with torch.no_grad():
        padded_loss = float(padded(padded.rows, h))
    total_padded = 0.0
    for n in range(mask.size(0)):
        for t in range(mask.size(1)):
            y = int(rows["labels"][n, t])
            p = 1.0 / (1.0 + math.exp(-(float(logits[n, t, 1]) - float(logits[n, t, 0]))))
            total_padded += -(y * math.log(p) + (1 - y) * math.log(1.0 - p))
    assert padded_loss == pytest.approx(total_padded / mask.numel(), rel=1e-5)


def test_replaced_iff_the_generator_changed_the_token(encoder) -> None:
    vocab = len(encoder.tokenizer)
    batch = views_batch(encoder)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    # G's choice: the token itself at even positions, another token (id + 1) at odd ones
    odd = torch.arange(ids.size(1)) % 2 == 1  # (L,)
    g = FixedGenerator(vocab, lambda x: torch.where(odd, (ids + 1) % vocab, ids))
    rows = objective_with(g, encoder).token_loss(batch, seed=3).rows
    for n in range(ids.size(0)):
        for t in range(ids.size(1)):
            real = bool(mask[n, t])
            expected_token = (
                int(ids[n, t]) if (t == 0 or not real) else (int(ids[n, t]) + int(odd[t])) % vocab
            )
            assert int(rows["input_ids"][n, t]) == expected_token, (n, t)
            assert int(rows["labels"][n, t]) == int(real and expected_token != int(ids[n, t])), (n, t)
    assert int(rows["labels"].sum()) > 0


def test_masked_mode_edits_only_the_masked_tokens(encoder) -> None:
    vocab = len(encoder.tokenizer)
    batch = views_batch(encoder)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    g = FixedGenerator(vocab, lambda x: (ids + 1) % vocab)  # always a different token
    rows = (
        objective_with(g, encoder, edit_positions="masked", masking_ratio=0.5).token_loss(batch, seed=5).rows
    )
    seen = g.seen[-1]  # x' as G saw it: [MASK] or a random id where masked (or the same id, 10% of them)
    changed_input = seen != ids
    assert bool(changed_input.any())
    edited = rows["input_ids"]
    assert torch.equal(edited[changed_input], ((ids + 1) % vocab)[changed_input])
    untouched = (edited == ids) | changed_input | ((edited == (ids + 1) % vocab) & mask.bool())
    assert bool(untouched.all())
    assert bool((edited[~mask.bool()] == ids[~mask.bool()]).all())
    real = mask.bool() & (ids != encoder.tokenizer.cls_token_id) & (ids != encoder.tokenizer.sep_token_id)
    share = float(((edited != ids) & real).sum()) / float(real.sum())
    assert 0.2 < share < 0.8  # about half of the real tokens (masking ratio 0.5)


def test_a_sampled_token_equal_to_the_original_counts_as_original(encoder) -> None:
    vocab = len(encoder.tokenizer)
    batch = views_batch(encoder)
    ids = batch["input_ids"]
    same = FixedGenerator(vocab, lambda x: ids, mass=60.0)  # G restores every token (with probability ~1)
    rows = objective_with(same, encoder, generator_output="sample").token_loss(batch, seed=2).rows
    assert torch.equal(rows["input_ids"], ids) and int(rows["labels"].sum()) == 0
    other = FixedGenerator(vocab, lambda x: (ids + 1) % vocab, mass=60.0)
    rows = objective_with(other, encoder, generator_output="sample").token_loss(batch, seed=2).rows
    expected = batch["attention_mask"].clone()
    expected[:, 0] = 0  # the first token is never edited
    assert torch.equal(rows["labels"], expected)


def test_h_takes_the_place_of_the_first_input_position(tiny_bert) -> None:
    encoder = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls")
    disc = build_discriminator(encoder).eval()
    batch = views_batch(encoder)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    h = torch.randn(ids.size(0), 32)
    with torch.no_grad():
        base = disc(ids, mask, h)
        other_first = ids.clone()
        other_first[:, 0] = 7  # a different first token: replaced by h anyway
        assert torch.allclose(disc(other_first, mask, h), base, atol=1e-6)
        assert not torch.allclose(disc(ids, mask, h + 1.0), base, atol=1e-3)
        # without h the backbone reads its own embedding of the first token: a different output
        plain = disc.head(disc.backbone(input_ids=ids, attention_mask=mask).last_hidden_state)
        assert not torch.allclose(plain, base, atol=1e-3)
    # D starts from the encoder's weights, as its own copy
    for (name, p), q in zip(encoder.backbone.named_parameters(), disc.backbone.parameters(), strict=True):
        assert torch.equal(p, q) and p.data_ptr() != q.data_ptr(), name
    with pytest.raises(ValueError, match="one vector per row"):
        disc(ids, mask, torch.randn(ids.size(0), 16))
    assert isinstance(disc, ConditionedDiscriminator)


def test_the_rtd_loss_alone_reaches_the_encoder_through_h(encoder, tiny_mlm) -> None:
    objective = objective_with(load_generator(str(tiny_mlm), encoder.tokenizer), encoder)
    batch = views_batch(encoder)
    term = objective.token_loss(batch, seed=11)
    assert isinstance(term, RTDTerm)
    z = encoder(**batch)  # (B·V, D): the training vector, after the MLP head
    term(term.rows, z).backward()
    grads = [p.grad for p in encoder.backbone.parameters() if p.grad is not None]
    assert grads and sum(float(g.abs().sum()) for g in grads) > 0
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in encoder.head.parameters())
    encoder.zero_grad(set_to_none=True)
    term(term.rows, encoder(**batch).detach()).backward()  # h cut off: the encoder gets nothing
    assert all(p.grad is None for p in encoder.parameters())
    assert all(p.grad is not None for p in term.discriminator.head.parameters())


def test_gradcache_step_equals_the_plain_step(tiny_bert, tiny_mlm) -> None:
    def run(chunk: int | None) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
        torch.manual_seed(0)
        encoder = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", mlp_only_train=True)
        objective = objective_with(load_generator(str(tiny_mlm), encoder.tokenizer), encoder, weight=0.5)
        disc = objective._bound[0]  # type: ignore[index]
        encoder.eval(), disc.eval()  # no dropout: the two step forms see the same functions
        method = Method(views=duplicate_view(2), objective=objective, examples=[])
        out = forward_loss(
            encoder, views_batch(encoder), method, len(SENTENCES), chunk_size=chunk, token_seed=4
        )
        grads = {f"e.{n}": p.grad.clone() for n, p in encoder.named_parameters() if p.grad is not None}
        grads.update({f"d.{n}": p.grad.clone() for n, p in disc.named_parameters() if p.grad is not None})
        return out, grads

    plain, plain_grads = run(None)
    chunked, chunked_grads = run(1)
    assert set(plain) == set(chunked) == {"loss", "rtd"}
    assert float(plain["rtd"]) > 0
    torch.testing.assert_close(chunked["rtd"], plain["rtd"], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(chunked["loss"], plain["loss"], rtol=1e-5, atol=1e-6)
    assert plain_grads.keys() == chunked_grads.keys()
    for key, value in plain_grads.items():
        torch.testing.assert_close(chunked_grads[key], value, rtol=1e-4, atol=1e-6, msg=key)
