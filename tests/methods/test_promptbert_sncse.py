"""PromptBERT and SNCSE: their views hold the templates (and the negation), they train end to end on the tiny
BERT, and the saved model applies its template at inference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from sentcl.cli import main
from sentcl.config import ConfigError, TrainConfig, from_dict, load_config
from sentcl.data.negation import negate
from sentcl.data.readers import Corpus
from sentcl.methods import build_method
from sentcl.methods.sncse.loss import SNCSE
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.prompt import PROMPTBERT_BERT_TEMPLATES
from sentcl.objectives.infonce import InfoNCE
from sentcl.training.validation import validate

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TEMPLATES = ['the news : "[X]" is [MASK] .', 'the report of "[X]" is [MASK] .']


def recipe(tmp: Path, tiny_bert: Path, data_dir: Path, objective: dict, **data: object) -> dict:
    from helpers.data import tiny_recipe, write_corpus

    corpus = write_corpus(tmp / "corpus.txt", 24)
    r = tiny_recipe(tiny_bert, data_dir, corpus, tmp / "run", max_steps=2, eval_steps=2, save_steps=2)
    r["model"] = {
        "name_or_path": str(tiny_bert),
        "pooler": "mask",
        "max_length": 32,
        "prompt_templates": TEMPLATES,
        "mlp_only_train": True,
    }
    r["objective"] = objective
    r["data"].update(data)
    return r


def method_of(r: dict, tiny_bert: Path, sentences: list[str]):  # noqa: ANN201
    cfg = from_dict(TrainConfig, r)
    tok = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg").tokenizer
    return build_method(cfg, Corpus(Path("x"), sentences), tok)


def test_views_hold_the_templates_and_the_negation(tmp_path: Path, tiny_bert: Path, data_dir: Path) -> None:
    s = "the dog runs"
    m = method_of(recipe(tmp_path, tiny_bert, data_dir, {"name": "promptbert"}), tiny_bert, [s])
    assert isinstance(m.objective, InfoNCE) and m.objective.temperature == 0.05
    assert m.views(s) == ('the news : "the dog runs" is [MASK] .', 'the report of "the dog runs" is [MASK] .')
    m = method_of(recipe(tmp_path, tiny_bert, data_dir, {"name": "sncse"}), tiny_bert, [s])
    assert isinstance(m.objective, SNCSE)
    assert (m.objective.alpha, m.objective.beta, m.objective.bml_weight) == (0.1, 0.3, 1e-3)
    assert m.views(s) == (
        'the news : "the dog runs" is [MASK] .',
        'the report of "the dog runs" is [MASK] .',
        'the report of "the dog does not run" is [MASK] .',
    )


def test_negation_file_replaces_the_rules(tmp_path: Path, tiny_bert: Path, data_dir: Path) -> None:
    neg = tmp_path / "neg.tsv"
    neg.write_text("the dog runs\tno dog runs\n", encoding="utf-8")
    r = recipe(tmp_path, tiny_bert, data_dir, {"name": "sncse"}, negation_file=str(neg))
    views = method_of(r, tiny_bert, ["the dog runs"]).views("the dog runs")
    assert views[2] == 'the report of "no dog runs" is [MASK] .'
    with pytest.raises(ConfigError, match="no negation for 1 of the 2 training sentences, e.g. 'a cat'"):
        method_of(r, tiny_bert, ["the dog runs", "a cat"])


def test_prompt_methods_need_pooler_mask(tmp_path: Path, tiny_bert: Path, data_dir: Path) -> None:
    r = recipe(tmp_path, tiny_bert, data_dir, {"name": "promptbert"})
    r["model"] = {"name_or_path": str(tiny_bert), "pooler": "avg"}
    with pytest.raises(ConfigError, match="promptbert needs model.pooler=mask"):
        method_of(r, tiny_bert, ["a"])
    r["model"]["prompt_templates"] = TEMPLATES
    with pytest.raises(ConfigError, match="prompt_templates needs model.pooler=mask"):
        from_dict(TrainConfig, r)
    r = recipe(tmp_path, tiny_bert, data_dir, {"name": "unsup_simcse"})
    with pytest.raises(ConfigError, match="only methods whose views are templates use it .*not unsup_simcse"):
        validate(from_dict(TrainConfig, r))
    r["objective"] = {"name": "sncse"}
    r["model"]["pooler"] = "avg"
    r["model"].pop("prompt_templates")
    with pytest.raises(ConfigError, match="sncse needs model.pooler=mask"):
        validate(from_dict(TrainConfig, r))


@pytest.mark.parametrize("name", ["promptbert", "sncse"])
def test_trains_end_to_end_and_encodes_with_its_template(
    tmp_path: Path, tiny_bert: Path, data_dir: Path, name: str
) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe(tmp_path, tiny_bert, data_dir, {"name": name})), encoding="utf-8")
    assert main(["train", "--config", str(path)]) == 0
    run = tmp_path / "run"
    records = [
        r for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()) if r["event"] == "train"
    ]
    assert [r["step"] for r in records] == [1, 2] and all(np.isfinite(r["loss"]) for r in records)
    if name == "sncse":
        assert all(r["loss"] == pytest.approx(r["infonce"] + 1e-3 * r["bml"], rel=1e-4) for r in records)
    assert "stsb_dev" in json.loads((run / "results.json").read_text())["results"]
    saved = run / "checkpoint-2" / "model"
    meta = json.loads((saved / "sentcl.json").read_text())
    assert meta["pooler"] == "mask" and meta["prompt"]["templates"] == TEMPLATES
    assert meta["mlp_only_train"] and (saved / "sentcl_head.safetensors").is_file()  # the MLP, training only
    model = SentenceEncoder.from_pretrained(str(saved)).eval()
    assert model.head is not None and not model.uses_head
    sentences = ["a man plays the guitar", "the cat sits"]
    filled = [TEMPLATES[0].replace("[X]", s) for s in sentences]
    with torch.no_grad():
        by_hand = model(**model.tokenize(filled))
    torch.testing.assert_close(model.encode(sentences, convert_to_numpy=False), by_hand, atol=1e-5, rtol=1e-5)


# model, batch, lr, max_len, epochs, eval_steps, temperature, denoise, templates: typed in by hand from the
# authors' scripts (Prompt-BERT run.sh "unsup-bert"; SNCSE train_SNCSE.sh + train_SNCSE.py)
OF, COLON = 'This sentence of "[X]" means [MASK] .', 'This sentence : "[X]" means [MASK] .'
PAPER = {
    "promptbert_bert_base": ("bert-base-uncased", 256, 1e-5, 32, 1, 125, 0.05, "train", [OF, COLON]),
    "sncse_bert_base": ("bert-base-uncased", 256, 1e-5, 32, 1, 125, 0.05, "never", [COLON, OF]),
}


@pytest.mark.parametrize("name", sorted(PAPER))
def test_gpu_recipes_carry_the_papers_settings(name: str) -> None:
    cfg = load_config(TrainConfig, CONFIGS / f"{name}.yaml")
    t = cfg.training
    got = (
        cfg.model.name_or_path,
        t.batch_size,
        t.learning_rate,
        cfg.model.max_length,
        t.epochs,
        t.eval_steps,
    )
    m = cfg.model
    assert (*got, cfg.objective.temperature, m.prompt_denoise, m.prompt_templates) == PAPER[name]
    assert m.pooler == "mask" and m.mlp_only_train and t.precision == "fp16"
    if name.startswith("sncse"):
        o = cfg.objective
        assert (o.bml_alpha, o.bml_beta, o.bml_weight) == (0.1, 0.3, 1e-3)
    else:
        assert m.prompt_templates == list(PROMPTBERT_BERT_TEMPLATES)


@pytest.mark.parametrize("name", ["promptbert", "sncse"])
def test_cpu_recipes_load(name: str) -> None:
    cfg = load_config(TrainConfig, CONFIGS / f"{name}.yaml")
    assert cfg.objective.name == name and cfg.model.pooler == "mask"
    assert cfg.model.name_or_path == "all-MiniLM-L6-v2"


def test_rule_negator_is_what_sncse_uses_by_default() -> None:
    assert negate("the dog runs") == "the dog does not run"
