"""The model card a training run writes into best/: YAML front matter read with yaml.safe_load, checked
against the run's own files (config.json, metrics.jsonl, results.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sentcl.cli import main
from sentcl.interop.model_card import CARD_FILE, base_model_id, read_card_metadata
from sentcl.modeling.encoder import SentenceEncoder


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory, tiny_bert: Path, data_dir: Path) -> Path:
    from helpers.data import tiny_recipe, write_corpus

    tmp = tmp_path_factory.mktemp("card")
    corpus = write_corpus(tmp / "my_corpus.txt", 40)
    recipe = tiny_recipe(tiny_bert, data_dir, corpus, tmp / "card_run", save_steps=0, log_steps=2)
    recipe["model"]["pooler"] = "avg"
    recipe["eval"]["final_tasks"] = ["stsb"]
    (tmp / "recipe.yaml").write_text(yaml.safe_dump(recipe), encoding="utf-8")
    assert main(["train", "--config", str(tmp / "recipe.yaml")]) == 0
    return tmp / "card_run"


def test_front_matter_matches_the_run(run_dir: Path, tiny_bert: Path) -> None:
    text = (run_dir / "best" / CARD_FILE).read_text(encoding="utf-8")
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("\n---\n", 1)[0][4:])  # the front matter, parsed independently
    assert meta == read_card_metadata(run_dir / "best" / CARD_FILE)
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    assert meta["library_name"] == "sentcl"
    assert meta["pipeline_tag"] == "sentence-similarity"
    assert meta["base_model"] == str(tiny_bert) == config["model"]["name_or_path"]
    assert meta["datasets"] == ["my_corpus"]
    assert {"sentence-similarity", "unsup_simcse"} <= set(meta["tags"])
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    stsb = results["results"]["stsb"]["STSBenchmark"]["spearman"]
    (entry,) = meta["model-index"]
    assert entry["name"] == "card_run"
    (result,) = entry["results"]
    assert result["dataset"]["type"] == "STSBenchmark" and result["dataset"]["split"] == "test"
    assert result["metrics"][0]["value"] == pytest.approx(round(stsb, 2))


def test_body_has_recipe_tables_and_loading(run_dir: Path) -> None:
    text = (run_dir / "best" / CARD_FILE).read_text(encoding="utf-8")
    config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    recipe = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    assert recipe == config  # the resolved config, complete
    evals = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    for record in (r for r in evals if r.get("event") == "eval"):
        assert f"| {record['step']} | {record['stsb_dev']:.2f}" in text  # every dev evaluation
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert f"| STS-B | {results['results']['stsb']['STSBenchmark']['spearman']:.2f} |" in text
    assert "steps: 4" in text
    for snippet in ("SentenceEncoder.from_pretrained", "SentenceTransformer(", "AutoModel.from_pretrained"):
        assert snippet in text
    # the card does not disturb loading the folder
    assert SentenceEncoder.from_pretrained(str(run_dir / "best")).pooler == "avg"


def test_base_model_short_name_maps_to_hub_id() -> None:
    assert base_model_id("all-MiniLM-L6-v2") == "sentence-transformers/all-MiniLM-L6-v2"
    assert base_model_id("bert-base-uncased") == "bert-base-uncased"


def test_plain_transformers_snippet_reproduces_the_embedding(run_dir: Path) -> None:
    import numpy as np

    text = (run_dir / "best" / CARD_FILE).read_text(encoding="utf-8")
    snippet = next(b.split("```", 1)[0] for b in text.split("```python\n")[1:] if "AutoModel" in b)
    scope: dict = {}
    exec(snippet, scope)  # noqa: S102 - the card's own code, run as a reader would
    expected = SentenceEncoder.from_pretrained(str(run_dir / "best")).encode(["A man plays guitar."])
    np.testing.assert_allclose(scope["emb"].numpy(), expected, atol=1e-5)
