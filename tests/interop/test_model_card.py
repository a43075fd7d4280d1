"""The model card a training run writes into best/: YAML front matter read with yaml.safe_load, checked
against the run's own files (config.json, metrics.jsonl, results.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sentcl.cli import main
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.model_card import CARD_FILE, base_model_id, card_metadata, read_card_metadata


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
    assert meta["library_name"] == "sentence-transformers"  # pooler avg: the folder is an ST folder
    assert (run_dir / "best" / "modules.json").is_file()
    assert meta["pipeline_tag"] == "sentence-similarity"
    assert meta["base_model"] == str(tiny_bert) == config["model"]["name_or_path"]
    assert "datasets" not in meta  # a local file is no hub dataset id: named in the text, marked local
    assert f"- data: `{config['data']['train_file']}` (a local file, not a hub dataset)" in text
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
    for snippet in ("open_model(", "SentenceTransformer(", "AutoModel.from_pretrained"):
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


def _snippet(text: str, marker: str) -> str:
    return next(b.split("```", 1)[0] for b in text.split("```python\n")[1:] if marker in b)


def test_dataset_ids_where_the_hub_has_them() -> None:
    config = {"objective": {"name": "unsup_simcse"}, "model": {"name_or_path": "all-MiniLM-L6-v2"}}
    for train_file, expected in (
        ("corpora/wiki1m_for_simcse.txt", ["princeton-nlp/datasets-for-simcse"]),
        ("corpora/nli_for_simcse.csv", ["princeton-nlp/datasets-for-simcse"]),
        ("senteval/STS/STSBenchmark/sts-train.csv", ["sentence-transformers/stsb"]),
        ("senteval/SNLI", ["stanfordnlp/snli"]),
        ("corpora/wiki1m_prefix.txt", None),
    ):
        meta = card_metadata({**config, "data": {"train_file": train_file}}, "m", st_folder=False)
        assert meta.get("datasets") == expected, train_file
        assert meta["library_name"] == "transformers"


@pytest.mark.parametrize("pooler", ["avg", "cls", "avg_top2"])
def test_every_save_writes_a_card(tmp_path: Path, tiny_bert: Path, pooler: str) -> None:
    """save_pretrained from Python writes README.md: library_name by the folder's kind, and every snippet in it
    reproduces sentcl's embedding when run as a reader would (sentence-transformers' own loader included)."""
    import numpy as np

    model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler=pooler, for_training=True)
    model.save_pretrained(tmp_path / "saved")
    text = (tmp_path / "saved" / CARD_FILE).read_text(encoding="utf-8")
    meta = read_card_metadata(tmp_path / "saved" / CARD_FILE)
    st_folder = (tmp_path / "saved" / "modules.json").is_file()
    assert st_folder == (pooler != "avg_top2")
    assert meta["library_name"] == ("sentence-transformers" if st_folder else "transformers")
    assert ("SentenceTransformer(" in text) == st_folder
    expected = model.encode(["A man plays guitar."])
    scope: dict = {}
    exec(_snippet(text, "AutoModel"), scope)  # noqa: S102 - the card's own code
    emb = scope["emb"].numpy()
    if pooler == "cls":  # the card says: then the MLP head, from sentcl_head.safetensors
        from safetensors.torch import load_file

        head = load_file(str(tmp_path / "saved" / "sentcl_head.safetensors"))
        emb = np.tanh(emb @ head["dense.weight"].numpy().T + head["dense.bias"].numpy())
    np.testing.assert_allclose(emb, expected, atol=1e-5)
    if st_folder:
        scope = {}
        exec(_snippet(text, "SentenceTransformer("), scope)  # noqa: S102
        unit = expected / np.linalg.norm(expected, axis=1, keepdims=True)
        np.testing.assert_allclose(scope["emb"][:1], unit, atol=1e-5)
