"""BERT-flow: the log-likelihood by the change-of-variables formula with a Jacobian computed independently
(autograd, one sentence at a time), invertibility, maximum-likelihood training, storage with the model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.data import write_corpus
from safetensors.torch import load_file, save_file

from sentcl.files.paths import ModelFolderError
from sentcl.modeling import SentenceEncoder
from sentcl.modeling.postprocess.flow import FlowConfig, Glow, fit_flow
from sentcl.postprocess.fit import PostprocessSettings, postprocess_model

SENTENCES = ["a man is playing a guitar", "the stock price falls", "a", "the dog runs in the garden"]


def scrambled_flow(dim: int = 6, levels: int = 2, depth: int = 2) -> Glow:
    """A tiny Glow with every parameter away from its initial value (zero-initialised layers included)."""
    flow = Glow(FlowConfig(dim=dim, levels=levels, depth=depth, width=5), seed=1)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in flow.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return flow.eval()


def test_log_likelihood_is_the_change_of_variables_formula() -> None:
    flow = scrambled_flow()
    x = torch.randn(5, 6)
    ours = flow.log_likelihood(x).detach()
    for i in range(5):
        jac = torch.autograd.functional.jacobian(lambda v: flow(v.unsqueeze(0))[0], x[i])  # (6, 6)
        z = flow(x[i : i + 1])[0].detach()
        by_hand = sum(-0.5 * (float(zj) ** 2 + math.log(2 * math.pi)) for zj in z)
        by_hand += float(torch.linalg.slogdet(jac)[1])
        assert float(ours[i]) == pytest.approx(by_hand, abs=1e-4)


def test_flow_is_invertible_and_keeps_the_dimension() -> None:
    flow = scrambled_flow(dim=7, levels=3, depth=1)
    x = torch.randn(9, 7)
    z = flow(x)
    assert z.shape == (9, 7)
    torch.testing.assert_close(flow.inverse(z), x, atol=1e-4, rtol=1e-4)


def test_maximum_likelihood_training_raises_the_likelihood() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 8)) @ rng.normal(size=(8, 8)) + 5.0  # correlated, off-centre
    start = Glow(FlowConfig(dim=8), seed=0).train()
    flow = fit_flow(x, FlowConfig(dim=8), epochs=3, seed=0)
    with torch.no_grad():
        start.log_likelihood(torch.as_tensor(x[:32], dtype=torch.float32))  # actnorm's data-dependent init
        before = float(start.eval().log_likelihood(torch.as_tensor(x, dtype=torch.float32)).mean())
        after = float(flow.log_likelihood(torch.as_tensor(x, dtype=torch.float32)).mean())
    assert after > before + 1.0
    z = flow(torch.as_tensor(x, dtype=torch.float32)).detach().numpy()
    assert np.abs(z.mean(axis=0)).max() < 0.5 and np.abs(z.std(axis=0) - 1).max() < 0.5  # near N(0, I)


def test_flow_is_stored_with_the_model(tiny_bert: Path, tmp_path: Path) -> None:
    fit = write_corpus(tmp_path / "fit.txt", 64, seed=4)
    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    raw = model.encode(SENTENCES)
    postprocess_model(model, PostprocessSettings("flow", steps=5, levels=2, depth=2, width=8), [fit])
    ours = model.encode(SENTENCES)
    np.testing.assert_allclose(ours, model.flow(torch.as_tensor(raw)).detach().numpy(), atol=1e-5)
    folder = tmp_path / "flow"
    model.save_pretrained(folder)
    meta = json.loads((folder / "sentcl.json").read_text())
    assert meta["flow"] == {"dim": 32, "levels": 2, "depth": 2, "width": 8}
    assert meta["postprocess"]["method"] == "flow" and meta["postprocess"]["steps"] == 5
    assert not (folder / "modules.json").exists()  # sentence-transformers would load it without the flow
    np.testing.assert_array_equal(SentenceEncoder.from_pretrained(str(folder)).encode(SENTENCES), ours)

    state = load_file(str(folder / "sentcl_flow.safetensors"))
    state.pop(next(k for k in state if k.endswith("log_s")))
    save_file(state, str(folder / "sentcl_flow.safetensors"))
    with pytest.raises(ModelFolderError, match=r"sentcl_flow.safetensors: does not match the flow.*log_s"):
        SentenceEncoder.from_pretrained(str(folder))
    (folder / "sentcl_flow.safetensors").unlink()
    with pytest.raises(ModelFolderError, match="sentcl_flow.safetensors: missing"):
        SentenceEncoder.from_pretrained(str(folder))


def test_a_flow_on_one_repeated_sentence_is_refused_for_that_cause_pp_flow_const() -> None:
    """Reliability row PP_flow_const: 50 identical sentences gave 'the flow diverged at step 2 (NLL nan); lower
    --learning-rate', the wrong cause."""
    with pytest.raises(ValueError, match="the 50 sentence vectors are all the same vector"):
        fit_flow(np.tile(np.linspace(-1, 1, 8), (50, 1)), steps=5)
    varied = np.random.default_rng(0).normal(size=(50, 8))
    fit_flow(varied, steps=5)  # the same call on vectors that differ trains
