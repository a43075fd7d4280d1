"""The worked example of docs/guides/development.md ("How to add a method") works as written: its three files, put in a
package of their own, plus the one registration line, make a method that a recipe names, the validation pass
checks, ``build_method`` builds and a real tiny encoder trains one step with. Its loss is checked against a
hand-written loop in numpy."""

from __future__ import annotations

import importlib
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sentcl.methods
from sentcl.config import ConfigError, TrainConfig, load_config
from sentcl.config.method_catalogue import METHODS
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.training.batch_source import make_batch
from sentcl.training.step import embed_views
from sentcl.training.validation import validate

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "development.md"
FILE_BLOCK = re.compile(r"`sentcl/methods/margin_simcse/(\w+\.py)`:\n\n```python\n(.*?)```", re.S)


@pytest.fixture
def margin_simcse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The docs' package written under tmp_path, found as ``sentcl.methods.margin_simcse``, and registered."""
    section = GUIDE.read_text(encoding="utf-8").split("## How to add a method", 1)[1].split("\n## ", 1)[0]
    files = dict(FILE_BLOCK.findall(section))
    assert sorted(files) == ["build.py", "loss.py", "options.py"]
    package = tmp_path / "margin_simcse"
    package.mkdir()
    (package / "__init__.py").write_text('"""A worked example."""\n', encoding="utf-8")
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(sentcl.methods, "__path__", [*sentcl.methods.__path__, str(tmp_path)])
    # the catalogue's table, restored after the test
    monkeypatch.setattr(METHODS, "_factories", dict(METHODS._factories))
    # the one registration line of the docs: importing the options module registers its record
    line = "import sentcl.methods.margin_simcse.options  # noqa: F401"
    assert line in section
    importlib.import_module(line.split()[1])

    assert "margin_simcse" in METHODS
    yield METHODS.build("margin_simcse")
    for module in [m for m in sys.modules if m.startswith("sentcl.methods.margin_simcse")]:
        del sys.modules[module]


def reference_loss(a: np.ndarray, p: np.ndarray, temperature: float, margin: float) -> float:
    """-1/B sum_i log softmax_i((cos(a_i, p_j) - m [i == j]) / tau)_i, written as loops."""
    total = 0.0
    for i in range(len(a)):
        logits = []
        for j in range(len(p)):
            cos = float(a[i] @ p[j] / (np.linalg.norm(a[i]) * np.linalg.norm(p[j])))
            logits.append((cos - (margin if i == j else 0.0)) / temperature)
        top = max(logits)
        total -= logits[i] - (top + math.log(sum(math.exp(x - top) for x in logits)))
    return total / len(a)


def test_the_docs_example_is_a_method(margin_simcse, tiny_bert: Path) -> None:
    cfg = load_config(
        TrainConfig,
        None,
        [f"model.name_or_path={tiny_bert}", "objective.name=margin_simcse", "objective.margin=0.2"],
    )
    assert type(cfg.objective).__name__ == "MarginSimCSEOptions" and cfg.objective.margin == 0.2
    validate(cfg, environment=False)
    with pytest.raises(ConfigError, match="objective.margin"):
        load_config(TrainConfig, None, ["objective.name=margin_simcse", "objective.margin=1.5"])

    sentences = ["a man plays a guitar", "the dog runs", "stock prices fall", "a cat sits on a mat"]
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler=cfg.model.pooler, dropout=0.1)
    method = build_method(cfg, Corpus(Path("x"), sentences), model.tokenizer)
    model.train()
    z = embed_views(model, make_batch(sentences, method, model), method, len(sentences))  # (B, 2, D)
    loss = method.objective(z)["loss"]
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())
    a, p = z.detach()[:, 0].double().numpy(), z.detach()[:, 1].double().numpy()
    assert float(loss.detach()) == pytest.approx(
        reference_loss(a, p, cfg.objective.temperature, 0.2), rel=1e-4
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.integers(2, 6),
    dim=st.integers(2, 8),
    temperature=st.floats(0.02, 1.0),
    margin=st.floats(0.0, 0.9),
    seed=st.integers(0, 2**16),
)
def test_the_docs_loss_matches_the_loop(margin_simcse, batch, dim, temperature, margin, seed) -> None:
    from sentcl.methods.margin_simcse.loss import MarginInfoNCE  # type: ignore[import-not-found]

    z = torch.from_numpy(np.random.default_rng(seed).standard_normal((batch, 2, dim)))  # (B, 2, D)
    got = float(MarginInfoNCE(temperature, margin)(z)["loss"])
    assert got == pytest.approx(
        reference_loss(z[:, 0].numpy(), z[:, 1].numpy(), temperature, margin), rel=1e-6
    )
