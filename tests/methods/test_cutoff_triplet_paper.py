"""Han, Jeong and Chae's token cut-off triplet as the paper writes it: views (s, s, s*, s**), NT-Xent on (s, s'), triplet without margin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sentcl.config import TrainConfig, load_config
from sentcl.data.augment.tokens import TokenCutoff
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.methods.cutoff_triplet.loss import CutoffTriplet
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.training.batch_source import augment_tokens, make_batch
from sentcl.training.step import embed_views

SENTENCES = ["a man is playing a guitar", "the dog runs near the river", "stock price falls", "a cat sits"]


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_paper_form_against_loop() -> None:
    g = torch.Generator().manual_seed(3)
    z = torch.randn(5, 4, 6, generator=g, dtype=torch.float64)
    h, tau = z.numpy(), 0.07
    nt_xent = 0.0
    for i in range(5):  # -log e^{cos(s_i, s'_i)/tau} / sum_j e^{cos(s_i, s'_j)/tau}
        logits = np.array([_cos(h[i, 0], h[j, 1]) / tau for j in range(5)])
        nt_xent += -(logits[i] - np.log(np.exp(logits).sum())) / 5
    triplet = np.mean([max(0.0, _cos(h[i, 0], h[i, 3]) - _cos(h[i, 0], h[i, 2])) for i in range(5)])
    out = CutoffTriplet(temperature=tau)(z)  # the defaults are the paper's: form paper, m = 0
    assert out["infonce"].item() == pytest.approx(nt_xent, rel=1e-10)
    assert out["triplet"].item() == pytest.approx(triplet, rel=1e-10)
    assert out["loss"].item() == pytest.approx(nt_xent + triplet, rel=1e-10)
    assert triplet > 0  # the term is live on random vectors, so the check above can fail


def _method(tiny_bert: Path, *overrides: str):
    cfg = load_config(
        TrainConfig,
        Path(__file__).resolve().parents[2] / "configs" / "cutoff_triplet.yaml",
        [f"model.name_or_path={tiny_bert}", "model.dropout=0.0", *overrides],
    )
    model = SentenceEncoder.from_pretrained(
        str(tiny_bert),
        pooler=cfg.model.pooler,
        dropout=cfg.model.dropout,
        mlp_only_train=cfg.model.mlp_only_train,
    )
    return cfg, model, build_method(cfg, Corpus(Path("x"), list(SENTENCES)), model.tokenizer)


def test_recipe_views_heads_and_inference(tiny_bert: Path) -> None:
    cfg, model, method = _method(tiny_bert)
    assert (cfg.objective.triplet_form, cfg.objective.margin, cfg.model.mlp_only_train) == (
        "paper",
        0.0,
        False,
    )
    method.reseed(0, 0)
    batch = augment_tokens(make_batch(SENTENCES, method, model), method, len(SENTENCES))
    ids = batch["input_ids"].view(len(SENTENCES), 4, -1)  # (B, V, L)
    unk = model.tokenizer.unk_token_id
    cut = (ids == unk).sum(-1)  # (B, V)
    assert cut[:, 0].eq(0).all() and cut[:, 1].eq(0).all(), "s and its dropout copy are not cut"
    assert (cut[:, 3] > cut[:, 2]).all(), "the strong view cuts more than the weak one"
    model.train()
    z = embed_views(model, batch, method, len(SENTENCES))  # (B, 4, D)
    cls = model.backbone(**batch).last_hidden_state[:, 0].view(len(SENTENCES), 4, -1)  # (B, 4, H)
    w, b = model.head.dense.weight, model.head.dense.bias
    for v in range(3):
        torch.testing.assert_close(z[:, v], torch.tanh(cls[:, v] @ w.T + b))
    torch.testing.assert_close(z[:, 3], torch.nn.functional.leaky_relu(cls[:, 3] @ w.T + b))
    # inference: [CLS] through the (Tanh) MLP
    model.eval()
    enc = model.tokenize(SENTENCES)
    with torch.no_grad():
        got = model(**enc)
        cls_eval = model.backbone(**enc).last_hidden_state[:, 0]
    torch.testing.assert_close(got, torch.tanh(cls_eval @ w.T + b))


def test_weak_positive_is_a_named_option(tiny_bert: Path) -> None:
    _, _, method = _method(tiny_bert, "objective.triplet_form=weak_positive", "objective.margin=0.2")
    assert method.num_views == 3 and method.objective.margin == 0.2
    assert method.token_augment[0] is None and method.token_augment[1] is not None


@pytest.mark.parametrize("replace_with", ["unk", "pad"])
def test_strong_view_cuts_strictly_more_wherever_possible(tiny_bert: Path, replace_with: str) -> None:
    _, model, _ = _method(tiny_bert)
    special_ids = set(model.tokenizer.all_special_ids) - {model.tokenizer.unk_token_id}
    vocab = [i for i in range(1000, 1100) if i not in special_ids]
    for n in range(1, 31):  # sentences of n real tokens: [CLS] w_1..w_n [SEP]
        ids = torch.tensor([[model.tokenizer.cls_token_id, *vocab[:n], model.tokenizer.sep_token_id]])
        mask = torch.ones_like(ids)
        weak = TokenCutoff(0.1, model.tokenizer, replace_with=replace_with, generator=n)
        strong = TokenCutoff(0.2, model.tokenizer, replace_with=replace_with, generator=n, exceed_rate=0.1)
        changed = [int((aug(ids, mask).input_ids != ids).sum()) for aug in (weak, strong)]
        most = n - 1 if replace_with == "pad" else n  # erasing keeps one real token visible
        # independent count: round half up, at least 1, then at least weak + 1 when the sentence has room
        c_weak = min(max(1, int(np.floor(0.1 * n + 0.5))), most)
        c_strong = min(max(1, int(np.floor(0.2 * n + 0.5)), c_weak + 1), most)
        assert changed == [c_weak, c_strong], n
        if most > c_weak:
            assert changed[1] > changed[0], n


def test_grid_puts_the_papers_tables_1_2_beside_the_right_points() -> None:
    from sentcl.experiments.grid import load_grid, point_configs

    spec = load_grid(Path(__file__).resolve().parents[2] / "configs" / "experiments" / "cutoff_triplet.yaml")
    cfgs = {p.name: c for p, c in point_configs(spec, "cpu")}
    expected = {  # Han, Jeong and Chae, BERT-base: (cutoff token, strong-view activation) -> 7-task STS average
        ("unk", "tanh"): 76.54,
        ("unk", "leaky_relu"): 76.91,
        ("pad", "leaky_relu"): 76.51,
        ("mask", "leaky_relu"): 76.50,
    }
    for name, value in spec.paper.items():
        cfg = cfgs[name]
        if cfg.objective.name == "unsup_simcse":
            assert value == 76.25
            continue
        assert cfg.objective.triplet_form == "paper" and cfg.training.precision == "fp32"
        assert expected[(cfg.data.cutoff_token, cfg.objective.strong_activation)] == value
    ours = [c for c in cfgs.values() if getattr(c.objective, "triplet_form", None) == "weak_positive"]
    assert len(ours) == 1 and ours[0].objective.margin == 0.2 and ours[0].model.mlp_only_train


@pytest.mark.parametrize("order", ["weak_closer", "as_printed"])
@pytest.mark.parametrize("margin", [0.0, 0.3])
def test_triplet_orders_against_the_formula(order: str, margin: float) -> None:
    """weak_closer: max(0, m + cos(s, s**) - cos(s, s*)); as_printed: max(0, m + cos(s, s*) - cos(s, s**))."""
    g = torch.Generator().manual_seed(11)
    z = torch.randn(6, 4, 5, generator=g, dtype=torch.float64)
    h, tau = z.numpy(), 0.05
    terms = []
    for i in range(6):
        weak, strong = _cos(h[i, 0], h[i, 2]), _cos(h[i, 0], h[i, 3])
        terms.append(max(0.0, margin + (strong - weak if order == "weak_closer" else weak - strong)))
    out = CutoffTriplet(temperature=tau, margin=margin, order=order)(z)
    assert out["triplet"].item() == pytest.approx(float(np.mean(terms)), rel=1e-10)
    assert out["triplet"].item() > 0  # live on these vectors, so a swapped order would fail
    other = CutoffTriplet(tau, margin, order="as_printed" if order == "weak_closer" else "weak_closer")(z)
    assert other["triplet"].item() != pytest.approx(out["triplet"].item())


def test_order_option_reaches_the_objective_and_is_checked(tiny_bert: Path) -> None:
    from sentcl.config import ConfigError

    for order in ("weak_closer", "as_printed"):
        cfg, _, method = _method(tiny_bert, f"objective.order={order}")
        assert cfg.objective.order == order and method.objective.order == order
    assert _method(tiny_bert)[0].objective.order == "weak_closer"  # the default
    with pytest.raises(ConfigError, match="objective.order"):
        _method(tiny_bert, "objective.order=printed")
