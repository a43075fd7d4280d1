"""``model.student_ffn``: a student whose layers keep their most important feed-forward neurons.

References: the importance from transformers' own BertModel run one sentence at a time (no padding, so no
mask) with its intermediate activations read by a hook, in numpy; the narrowed student against a BertModel
that transformers builds at the new width from the kept neurons' weights; sentence-transformers' own loader
on the saved folder. Every check can fail: a wrong neuron, a padding token counted or a mis-sliced weight moves
the vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.tiny_bert import assert_distilbert_reloads, build_tiny_bert, tiny_distilbert
from modeling_folders import SENTENCES, hf_mean_pooled, st_encode
from transformers import BertConfig, BertModel, BertTokenizerFast

from sentcl.config import ModelConfig
from sentcl.config.typed import ConfigError, from_dict
from sentcl.modeling import SentenceEncoder
from sentcl.modeling.build import build_encoder
from sentcl.modeling.student import keep_ffn, neuron_importance

WIDTH = 24  # of the tiny BERT's 64 neurons a layer


@pytest.fixture(scope="module")
def bert3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("bert3"), seed=5, layers=3)


def reference_importance(folder: Path, sentences: list[str], layers: list[int]) -> list[np.ndarray]:
    """Each kept layer's importance by hand: one sentence a pass, |GELU output| summed over its tokens."""
    model = BertModel.from_pretrained(str(folder)).eval()
    tokenizer = BertTokenizerFast.from_pretrained(str(folder))
    sums = {i: np.zeros(model.config.intermediate_size) for i in layers}
    seen: dict[int, np.ndarray] = {}
    hooks = [
        model.encoder.layer[i].intermediate.register_forward_hook(
            lambda _m, _inp, out, i=i: seen.__setitem__(i, out[0].detach().numpy())  # (T, F)
        )
        for i in layers
    ]
    tokens = 0
    for sentence in sentences:
        ids = tokenizer(sentence, return_tensors="pt")
        with torch.no_grad():
            model(**ids)
        tokens += ids["input_ids"].shape[1]
        for i in layers:
            sums[i] += np.abs(seen[i]).sum(axis=0)
    for hook in hooks:
        hook.remove()
    return [
        sums[i] / tokens * np.linalg.norm(model.encoder.layer[i].output.dense.weight.detach().numpy(), axis=0)
        for i in layers
    ]


def _narrow(folder: Path, layers: list[int] | None, width: int | None) -> SentenceEncoder:
    cfg = ModelConfig(name_or_path=str(folder), pooler="avg", student_layers=layers, student_ffn=width)
    model = build_encoder(cfg, fit_sentences=SENTENCES)
    assert isinstance(model, SentenceEncoder)
    return model.eval()


def test_importance_matches_a_hand_loop(bert3: Path) -> None:
    """Every layer, then a cut: the padded, masked batch gives the one-sentence-a-pass figures."""
    encoder = SentenceEncoder.from_pretrained(str(bert3), pooler="avg").eval()
    ours = neuron_importance(encoder, SENTENCES, batch_size=3)  # batches with padding
    for got, expected in zip(ours, reference_importance(bert3, SENTENCES, [0, 1, 2]), strict=True):
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-4, atol=1e-7)


def test_narrow_student_equals_transformers_at_the_new_width(bert3: Path) -> None:
    """The cut [0, 2] keeps, in each layer, the WIDTH neurons the hand-computed importance ranks first; the
    reference is BertModel(intermediate_size=WIDTH) loaded with exactly those rows and columns."""
    # the importance of the cut student's layers: a 2-layer model's layer 1 is the teacher's layer 2, whose input
    # differs from the full model's, so the reference runs on a folder cut the same way
    cut = SentenceEncoder.from_pretrained(str(bert3), pooler="avg")
    from sentcl.modeling.student import keep_layers

    keep_layers(cut.backbone, [0, 2])
    cut_folder = bert3.parent / "cut-0-2"
    cut.backbone.save_pretrained(cut_folder)
    BertTokenizerFast.from_pretrained(str(bert3)).save_pretrained(cut_folder)
    scores = reference_importance(cut_folder, SENTENCES, [0, 1])

    student = _narrow(bert3, [0, 2], WIDTH)
    assert student.backbone.config.intermediate_size == WIDTH
    teacher = BertModel.from_pretrained(str(cut_folder))
    state = {}
    for key, value in teacher.state_dict().items():
        layer = int(key.split(".")[2]) if key.startswith("encoder.layer.") else None
        kept = np.sort(np.argsort(-scores[layer])[:WIDTH]) if layer is not None else None
        if key.endswith("intermediate.dense.weight") or key.endswith("intermediate.dense.bias"):
            value = value[kept]
        elif key.endswith("output.dense.weight") and ".attention." not in key:
            value = value[:, kept]
        state[key] = value
    reference = BertModel(BertConfig.from_pretrained(str(cut_folder), intermediate_size=WIDTH)).eval()
    reference.load_state_dict(state)
    expected = hf_mean_pooled(reference, student.tokenizer, SENTENCES)  # (N, H)
    np.testing.assert_allclose(student.encode(SENTENCES), expected, atol=1e-5)


def test_every_neuron_is_the_model_itself(bert3: Path) -> None:
    full = SentenceEncoder.from_pretrained(str(bert3), pooler="avg")
    same = _narrow(bert3, None, 64)
    np.testing.assert_allclose(same.encode(SENTENCES), full.encode(SENTENCES), atol=1e-6)


def test_saved_narrow_student_loads_anywhere(bert3: Path, tmp_path: Path) -> None:
    """The folder's config carries the width: sentcl and sentence-transformers reload the same vectors."""
    student = _narrow(bert3, [1, 2], 8)
    student.save_pretrained(tmp_path / "student")
    config = json.loads((tmp_path / "student" / "config.json").read_text())
    assert config["intermediate_size"] == 8 and config["num_hidden_layers"] == 2
    ours = SentenceEncoder.from_pretrained(str(tmp_path / "student")).encode(SENTENCES)
    np.testing.assert_allclose(ours, student.encode(SENTENCES), atol=1e-6)
    np.testing.assert_allclose(st_encode(tmp_path / "student", SENTENCES), ours, atol=1e-5)


def test_distilbert_feed_forward(tmp_path: Path) -> None:
    model = tiny_distilbert(2)
    lin1 = model.transformer.layer[1].ffn.lin1.weight.clone()
    scores = [torch.arange(32.0), torch.arange(32.0).flip(0)]  # layer 0 keeps the last 10, layer 1 the first
    keep_ffn(model, 10, scores, "tiny-distilbert")
    assert model.config.hidden_dim == 10
    torch.testing.assert_close(model.transformer.layer[1].ffn.lin1.weight, lin1[:10])
    assert_distilbert_reloads(model, tmp_path)


@pytest.mark.parametrize("width", [65, 0, True])
def test_bad_widths_name_the_model(bert3: Path, width: int) -> None:
    with pytest.raises(
        ConfigError, match=r"model.student_ffn: .* out of range: model .* has 64 feed-forward"
    ):
        keep_ffn(BertModel.from_pretrained(str(bert3)), width, [torch.ones(64)] * 3, str(bert3))


@pytest.mark.parametrize(("value", "message"), [(0, "must be positive"), (-3, "must be positive")])
def test_config_checks_the_width(value: int, message: str) -> None:
    with pytest.raises(ConfigError, match=f"model.student_ffn {message}"):
        from_dict(ModelConfig, {"student_ffn": value})


def test_no_sentences_no_narrowing(bert3: Path) -> None:
    cfg = ModelConfig(name_or_path=str(bert3), student_ffn=8)
    with pytest.raises(ValueError, match="model.student_ffn needs sentences"):
        build_encoder(cfg)


def test_an_architecture_without_a_feed_forward_is_refused() -> None:
    class Flat(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = BertConfig(num_hidden_layers=1)
            self.encoder = torch.nn.Module()
            self.encoder.layer = torch.nn.ModuleList([torch.nn.Linear(2, 2)])

    with pytest.raises(ConfigError, match="cannot narrow Flat: its layers' feed-forward maps"):
        keep_ffn(Flat(), 1, [torch.ones(1)])


def test_training_a_narrow_student(bert3: Path, data_dir: Path, tmp_path: Path) -> None:
    """A short distillation run from the config: the best folder is the narrow student; ST loads it."""
    from helpers.data import tiny_recipe, write_corpus

    from sentcl.config import TrainConfig
    from sentcl.training.loop import fit_sentences, train

    corpus = write_corpus(tmp_path / "corpus.txt", 32)
    recipe = tiny_recipe(bert3, data_dir, corpus, tmp_path / "run", save_steps=0, max_steps=2)
    recipe["model"].update({"pooler": "avg", "student_layers": [2], "student_ffn": 16})
    recipe["eval"]["final_tasks"] = []
    cfg = from_dict(TrainConfig, recipe)
    assert fit_sentences(cfg, type("C", (), {"examples": ["a", "b"]})()) == ["a", "b"]
    train(cfg)
    best = tmp_path / "run" / "best"
    config = json.loads((best / "config.json").read_text())
    assert config["intermediate_size"] == 16 and config["num_hidden_layers"] == 1
    model = SentenceEncoder.from_pretrained(str(best))
    np.testing.assert_allclose(st_encode(best, SENTENCES), model.encode(SENTENCES), atol=1e-5)
