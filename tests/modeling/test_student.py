"""``model.student_layers``: the kept layers are the teacher's (weights equal), a full subset is the model
itself, a cut student equals a model that transformers builds at the new depth from the same weights, and a
saved student loads in sentence-transformers to the same embeddings. Bad lists are ConfigErrors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.tiny_bert import assert_distilbert_reloads, build_tiny_bert, tiny_distilbert
from modeling_folders import SENTENCES, hf_mean_pooled, st_encode, st_folder
from transformers import BertConfig, BertModel

from sentcl.config import ModelConfig
from sentcl.config.typed import ConfigError, from_dict
from sentcl.modeling import SentenceEncoder
from sentcl.modeling.build import build_encoder
from sentcl.modeling.student import keep_layers


@pytest.fixture(scope="module")
def bert4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("bert4"), seed=3, layers=4)


def _student(folder: Path, layers: list[int] | None, pooler: str = "avg") -> SentenceEncoder:
    model = build_encoder(ModelConfig(name_or_path=str(folder), pooler=pooler, student_layers=layers))
    assert isinstance(model, SentenceEncoder)
    return model.eval()


def test_kept_layers_are_the_teachers_layers(bert4: Path) -> None:
    teacher = BertModel.from_pretrained(str(bert4))
    student = _student(bert4, [0, 2, 3])
    assert student.backbone.config.num_hidden_layers == 3
    assert len(student.backbone.encoder.layer) == 3
    for new, old in enumerate([0, 2, 3]):
        ours = student.backbone.encoder.layer[new].state_dict()
        theirs = teacher.encoder.layer[old].state_dict()
        assert ours.keys() == theirs.keys()
        for key in ours:
            torch.testing.assert_close(ours[key], theirs[key], rtol=0, atol=0)
    # layer 1 is gone: its weights differ from every kept layer's
    lost = teacher.encoder.layer[1].attention.self.query.weight
    assert all(
        not torch.equal(lost, layer.attention.self.query.weight) for layer in student.backbone.encoder.layer
    )
    torch.testing.assert_close(
        student.backbone.embeddings.word_embeddings.weight, teacher.embeddings.word_embeddings.weight
    )


def test_every_layer_is_the_full_model(bert4: Path) -> None:
    full = SentenceEncoder.from_pretrained(str(bert4), pooler="avg")
    same = _student(bert4, [0, 1, 2, 3])
    np.testing.assert_allclose(same.encode(SENTENCES), full.encode(SENTENCES), atol=1e-6)


def test_cut_equals_a_model_built_at_the_new_depth(bert4: Path) -> None:
    """Reference: transformers' own BertModel of 2 layers with the teacher's layers 1 and 3 loaded into it."""
    teacher = BertModel.from_pretrained(str(bert4))
    config = BertConfig.from_pretrained(str(bert4), num_hidden_layers=2)
    reference = BertModel(config).eval()
    state = {}
    for key, value in teacher.state_dict().items():
        match = re.match(r"encoder\.layer\.(\d+)\.(.*)", key)
        if match is None:
            state[key] = value
        elif int(match[1]) in (1, 3):
            state[f"encoder.layer.{(1, 3).index(int(match[1]))}.{match[2]}"] = value
    reference.load_state_dict(state)
    student = _student(bert4, [1, 3])
    expected = hf_mean_pooled(reference, student.tokenizer, SENTENCES)  # (N, H)
    np.testing.assert_allclose(student.encode(SENTENCES), expected, atol=1e-5)


def test_saved_student_loads_in_sentence_transformers(bert4: Path, tmp_path: Path) -> None:
    st = st_folder(tmp_path / "st", bert4, "mean", [], normalize=True)
    student = _student(st, [0, 2], pooler=None)  # type: ignore[arg-type]
    assert student.normalize_output
    folder = tmp_path / "student"
    student.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    assert config["num_hidden_layers"] == 2
    ours = SentenceEncoder.from_pretrained(str(folder)).encode(SENTENCES)
    np.testing.assert_allclose(st_encode(folder, SENTENCES), ours, atol=1e-5)
    np.testing.assert_allclose(ours, student.encode(SENTENCES), atol=1e-6)


def test_distilbert_layers(tmp_path: Path) -> None:
    model = tiny_distilbert(3)
    first = model.transformer.layer[2].ffn.lin1.weight.clone()
    keep_layers(model, [0, 2], "tiny-distilbert")
    assert model.config.n_layers == 2 and len(model.transformer.layer) == 2
    torch.testing.assert_close(model.transformer.layer[1].ffn.lin1.weight, first)
    assert_distilbert_reloads(model, tmp_path)


@pytest.mark.parametrize(
    ("layers", "message"),
    [
        ([0, 4], r"\[4\] out of range: model .* has 4 layers \(indices 0 to 3\)"),
        ([2, 1], "strictly increasing"),
        ([1, 1], "strictly increasing"),
    ],
)
def test_bad_layer_lists(bert4: Path, layers: list[int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        keep_layers(BertModel.from_pretrained(str(bert4)), layers, str(bert4))


@pytest.mark.parametrize(
    ("value", "message"),
    [([], "non-empty list"), ([1, 0], "strictly increasing"), ([0, -1], "non-empty list of layer indices")],
)
def test_config_checks_the_list(value: list[int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dict(ModelConfig, {"student_layers": value})


def test_an_architecture_without_layers_is_refused() -> None:
    class Flat(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = BertConfig(num_hidden_layers=2)
            self.blocks = torch.nn.ModuleList([torch.nn.Linear(2, 2)])

    with pytest.raises(ConfigError, match="cannot cut Flat: its transformer layers are not a ModuleList"):
        keep_layers(Flat(), [0])


def test_training_a_student_with_an_output_dim(bert4: Path, data_dir: Path, tmp_path: Path) -> None:
    """A short run: the best folder is a 2-layer model with the 8-wide Dense layer; ST loads it."""
    from helpers.data import tiny_recipe, write_corpus

    from sentcl.config import TrainConfig
    from sentcl.training.loop import train

    corpus = write_corpus(tmp_path / "corpus.txt", 32)
    recipe = tiny_recipe(bert4, data_dir, corpus, tmp_path / "run", save_steps=0, max_steps=2)
    recipe["model"].update({"pooler": "avg", "student_layers": [1, 3], "output_dim": 8})
    recipe["eval"]["final_tasks"] = []
    train(from_dict(TrainConfig, recipe))
    best = tmp_path / "run" / "best"
    assert json.loads((best / "config.json").read_text())["num_hidden_layers"] == 2
    model = SentenceEncoder.from_pretrained(str(best))
    assert model.embedding_dim == 8 and len(model.backbone.encoder.layer) == 2
    np.testing.assert_allclose(st_encode(best, SENTENCES), model.encode(SENTENCES), atol=1e-5)


def test_output_dim_fit_sentences_from_every_kind_of_example() -> None:
    from types import SimpleNamespace

    from sentcl.config import TrainConfig
    from sentcl.defaults import OUTPUT_DIM_PCA_SENTENCES
    from sentcl.training.loop import fit_sentences

    cfg = from_dict(TrainConfig, {"model": {"output_dim": 4}})
    record = SimpleNamespace(text="a record", successors=("next",))
    corpus = SimpleNamespace(examples=["one", ("p", "e", "c"), " ", record])
    assert fit_sentences(cfg, corpus) == ["one", "p", "e", "c", "a record"]
    many = SimpleNamespace(examples=[f"s{i}" for i in range(OUTPUT_DIM_PCA_SENTENCES + 5)])
    assert len(fit_sentences(cfg, many)) == OUTPUT_DIM_PCA_SENTENCES  # type: ignore[arg-type]
    cfg.model.output_dim_init = "random"
    assert fit_sentences(cfg, corpus) is None
