"""With two encoders, each view goes through the encoder its method names (``Method.view_encoders``, written in
the method's own build.py), checked against each encoder run by hand on that view's sentences."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sentcl.config import TrainConfig, load_config
from sentcl.data.readers import Corpus
from sentcl.methods import Method, build_method
from sentcl.modeling.dual import DualEncoder
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.objectives.infonce import InfoNCE
from sentcl.training.batch_source import make_batch
from sentcl.training.step import embed_views

SENTENCES = ["a cat sat on the mat", "dogs bark", "the weather is fine today in the hills", "rain"]
B = len(SENTENCES)


def three_views(text: str) -> tuple[str, ...]:
    return (text, text.upper(), text[::-1])


def encoders(tiny_bert: Path) -> DualEncoder:
    f = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="cls", dropout=0.0, train_max_length=64)
    g = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg", dropout=0.0, train_max_length=64)
    torch.nn.init.normal_(g.backbone.encoder.layer[0].output.dense.weight)  # two different encoders
    return DualEncoder(f, g)


@pytest.mark.parametrize("rule", [("g", "f", "g"), ("f", "f", "g"), ("g", "g", "g")])
@pytest.mark.parametrize("buckets", [0, 2])
def test_each_view_goes_through_the_encoder_its_method_names(tiny_bert: Path, rule, buckets: int) -> None:
    model = encoders(tiny_bert)
    objective = InfoNCE(0.05)
    objective.num_views = 3
    method = Method(views=three_views, objective=objective, examples=SENTENCES, view_encoders=rule)
    batch = make_batch(SENTENCES, method, model.f)
    with torch.no_grad():
        z = embed_views(model, batch, method, B, length_buckets=buckets)  # (B, 3, D)
        for v, name in enumerate(rule):
            encoder = model.f if name == "f" else model.g
            alone = encoder.encode([three_views(s)[v] for s in SENTENCES], convert_to_numpy=False)  # (B, D)
            torch.testing.assert_close(z[:, v], alone, atol=1e-5, rtol=0)


def test_a_method_that_names_no_encoders_is_refused_with_two(tiny_bert: Path) -> None:
    model = encoders(tiny_bert)
    method = Method(views=lambda s: (s, s), objective=InfoNCE(0.05), examples=SENTENCES)
    batch = make_batch(SENTENCES, method, model.f)
    with pytest.raises(ValueError, match=r"view_encoders.*got None"):
        embed_views(model, batch, method, B)


@pytest.mark.parametrize("name", ["unsup_simcse", "next_sentence", "quick_thoughts"])
def test_the_methods_that_allow_two_encoders_name_one_per_view(tiny_bert: Path, name: str) -> None:
    """Every method whose options accept ``model.two_encoders`` names an encoder for each of its views."""
    cfg = load_config(
        TrainConfig,
        None,
        [f"model.name_or_path={tiny_bert}", f"objective.name={name}", "model.two_encoders=true"],
    )
    assert "model.two_encoders" in type(cfg.objective).uses
    method = build_method(cfg, Corpus(Path("x"), SENTENCES), encoders(tiny_bert).tokenizer)
    assert method.view_encoders is not None and len(method.view_encoders) == method.num_views
    assert method.view_encoders[0] == "f" and set(method.view_encoders) == {"f", "g"}
