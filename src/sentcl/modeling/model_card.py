"""A model card (README.md in the Hugging Face hub's format) for every model folder sentcl saves.

YAML front matter: library_name (``sentence-transformers`` when the folder is a sentence-transformers folder,
else ``transformers``), base_model, pipeline_tag (sentence-similarity), tags, datasets (hub dataset ids only;
a local training file is named in the card's text, marked as a local file), metrics and a ``model-index`` with
the STS results; then the method and the resolved recipe, the training data and steps, the dev and final
results tables, and how to load the folder with sentcl, sentence-transformers and plain transformers. Written
by the training loop into ``best/`` at each new best and again after the final evaluation; every
``SentenceEncoder.save_pretrained`` writes the shorter card of ``write_saved_card`` (no training record).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from sentcl.config.method_catalogue import METHODS, method_record
from sentcl.config.poolers import pooler_info
from sentcl.config.sts_table import DISPLAY_NAMES, STS_TASKS, format_sts_table, main_score
from sentcl.files.atomic import atomic_write_text
from sentcl.files.read import load_yaml_text
from sentcl.modeling.st_folder import is_st_folder

CARD_FILE = "README.md"
_STS_RESULTS = ("sts", "stsb")  # final results shaped as evaluate_sts's, shown as tables
# sentcl's short offline names -> their hub ids (the card's base_model must be a hub id)
_HUB_IDS = {"all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2"}
# training files with a hub dataset: file (or folder) name -> dataset id
_DATASET_IDS = {
    "wiki1m_for_simcse.txt": "princeton-nlp/datasets-for-simcse",  # SimCSE's 10^6 Wikipedia sentences
    "nli_for_simcse.csv": "princeton-nlp/datasets-for-simcse",  # SimCSE's SNLI + MNLI triplets
    "sts-train.csv": "sentence-transformers/stsb",  # STS Benchmark's training split
    "SNLI": "stanfordnlp/snli",
}


def base_model_id(name_or_path: str) -> str:
    """The hub id of the starting model where sentcl knows it; else the name as given (a local path)."""
    return _HUB_IDS.get(name_or_path, name_or_path)


def dataset_id(train_file: str) -> str | None:
    """The hub dataset id of a training file where it has one (by its file name), else None (a local file)."""
    return _DATASET_IDS.get(Path(train_file).name)


def _data_line(train_file: str) -> str:
    found = dataset_id(train_file)
    where = f"hub dataset `{found}`" if found else "a local file, not a hub dataset"
    return f"- data: `{train_file}` ({where})"


def _model_index(name: str, results: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    sts = (results or {}).get("sts") or (results or {}).get("stsb") or {}
    entries = []
    for task in STS_TASKS:
        if task not in sts:
            continue
        entries.append(
            {
                "task": {"type": "sentence-similarity", "name": "Semantic Textual Similarity"},
                "dataset": {"name": DISPLAY_NAMES.get(task, task), "type": task, "split": "test"},
                "metrics": [
                    {
                        "type": "spearman_cosine",
                        "value": round(main_score(sts, task), 2),
                        "name": "Spearman correlation of cosine similarities (x100)",
                    }
                ],
            }
        )
    return [{"name": name, "results": entries}] if entries else []


def front_matter(base_model: str | None, st_folder: bool, extra_tags: Sequence[str] = ()) -> dict[str, Any]:
    """The front matter every card shares: library_name by the folder's kind, base_model, tags."""
    meta: dict[str, Any] = {"library_name": "sentence-transformers" if st_folder else "transformers"}
    if base_model:
        meta["base_model"] = base_model_id(base_model)
    tags = ["sentence-similarity", "feature-extraction", *(["sentence-transformers"] if st_folder else [])]
    meta.update(pipeline_tag="sentence-similarity", tags=[*tags, "sentcl", *extra_tags])
    return meta


def card_metadata(
    config: Mapping[str, Any], name: str, results: Mapping[str, Any] | None = None, st_folder: bool = False
) -> dict[str, Any]:
    """The YAML front matter as a dict."""
    objective = config["objective"]["name"]
    meta = front_matter(config["model"]["name_or_path"], st_folder, [objective])
    found = dataset_id(config["data"]["train_file"])
    if found:
        meta["datasets"] = [found]
    meta["metrics"] = ["spearman_cosine"]
    index = _model_index(name, results)
    if index:
        meta["model-index"] = index
    return meta


def _method_section(name: str) -> tuple[str, list[str]]:
    """The method's one line and its card section (paper, citation, the paper's headline number), from its
    record (sentcl.config.method_catalogue); a name with no record (a run of an older sentcl) gets the name alone."""
    if name not in METHODS:
        return name, []
    record = method_record(name)
    paper = record.paper
    headline = (
        f"- the paper's headline number: {paper.headline:g} ({paper.headline_what})"
        if paper.headline is not None
        else f"- the paper's headline number: {paper.headline_what}"
    )
    return record.summary, [
        "## Method\n",
        f"`{name}`: {record.summary}.\n",
        f"- paper: {paper.line()}" + (f", <{paper.url}>" if paper.url else ""),
        headline + "\n",
        "Citation:\n",
        "```\n" + paper.citation + "\n```\n",
    ]


def _dev_table(dev_history: Sequence[tuple[int, float]], dev_task: str, best_step: int | None) -> str:
    lines = [f"| step | {dev_task} |", "|---:|---:|"]
    for step, score in dev_history:
        mark = " (best)" if step == best_step else ""
        lines.append(f"| {step} | {score:.2f}{mark} |")
    return "\n".join(lines)


def render_card(
    config: Mapping[str, Any],
    name: str,
    *,
    steps: int,
    train_examples: int | None = None,
    best_step: int | None = None,
    dev_history: Sequence[tuple[int, float]] = (),
    results: Mapping[str, Any] | None = None,
    pooler: str | None = None,
    load_path: str | None = None,
    st_folder: bool = False,
) -> str:
    meta = card_metadata(config, name, results, st_folder)
    model, data, objective, training = (
        config["model"],
        config["data"],
        config["objective"],
        config["training"],
    )
    method, method_part = _method_section(objective["name"])
    pooler = pooler or model.get("pooler") or "cls"
    head = pooler == "cls" and not model.get("mlp_only_train", False)  # the head is part of the embedding
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    where = load_path or name
    parts = [
        f"---\n{front}---\n",
        f"# {name}\n",
        f"A sentence encoder trained with sentcl from `{meta['base_model']}`: {method}. "
        f"Pooler `{pooler}`; embeddings are compared by cosine similarity.\n",
        *method_part,
        "## Training\n",
        _data_line(data["train_file"])
        + (f", {train_examples:,} examples" if train_examples is not None else ""),
        f"- steps: {steps} (batch {training['batch_size']}, learning rate {training['learning_rate']}, "
        f"seed {training['seed']})",
        f"- objective: `{objective['name']}`, temperature {objective.get('temperature')}",
        f"- best step by {config['eval']['dev_task']}: {best_step}\n",
        "The resolved recipe (`sentcl train --config` accepts it as YAML):\n",
        "```yaml\n" + yaml.safe_dump(json.loads(json.dumps(config)), sort_keys=False) + "```\n",
    ]
    if dev_history:
        parts += ["## Dev results\n", _dev_table(dev_history, config["eval"]["dev_task"], best_step) + "\n"]
    tables = {k: v for k, v in (results or {}).items() if k in _STS_RESULTS}
    for key, sts in tables.items():
        parts += [
            f"## Final results: {key} (Spearman x100, test sets)\n",
            format_sts_table({name: sts}) + "\n",
        ]
    other = {k: v for k, v in (results or {}).items() if k not in _STS_RESULTS}
    if other:
        parts += [
            "Other final results:\n",
            "```json\n" + json.dumps(other, indent=1, default=str)[:4000] + "\n```\n",
        ]
    parts += use_section(where, pooler, head, st_folder)
    return "\n".join(parts)


def use_section(where: str, pooler: str, head: bool, st_folder: bool) -> list[str]:
    """How to load the folder: sentcl, sentence-transformers (an ST folder only), plain transformers."""
    parts = [
        "## Use\n",
        "With sentcl:\n",
        "```python\nfrom sentcl import open_model\n\n"
        f'model = open_model("{where}")\n'
        'emb = model.encode(["A man plays guitar.", "Someone plays music."], normalize=True)\n```\n',
    ]
    if st_folder:
        parts += [
            "With sentence-transformers (`modules.json` gives the same embedding):\n",
            "```python\nfrom sentence_transformers import SentenceTransformer\n\n"
            f'model = SentenceTransformer("{where}")\n'
            'emb = model.encode(["A man plays guitar.", "Someone plays music."], normalize_embeddings=True)\n```\n',
        ]
    parts += [
        f"With plain transformers (backbone only; apply the `{pooler}` pooler yourself, "
        "`sentcl.json` says which):\n",
        "```python\nimport torch\nfrom transformers import AutoModel, AutoTokenizer\n\n"
        f'tok = AutoTokenizer.from_pretrained("{where}")\nmodel = AutoModel.from_pretrained("{where}")\n'
        'batch = tok(["A man plays guitar."], padding=True, return_tensors="pt")\n'
        "with torch.no_grad():\n    out = model(**batch, output_hidden_states=True)\n"
        + pooler_info(pooler).card_snippet
        + ("# then the MLP head: tanh(x W^T + b), W and b in sentcl_head.safetensors\n" if head else "")
        + "```\n",
    ]
    return parts


def write_saved_card(
    folder: str | Path,
    *,
    source: str | None,
    pooler: str,
    head: bool,
    dim: int,
    max_length: int,
    normalize: bool,
) -> Path:
    """The card of a folder saved from Python (``SentenceEncoder.save_pretrained``): what the folder holds and
    how to load it; no training record (a training run overwrites it with ``write_run_card``)."""
    folder = Path(folder)
    st_folder = is_st_folder(folder)
    meta = front_matter(source if source and not Path(source).exists() else None, st_folder)
    origin = f" from `{meta['base_model']}`" if "base_model" in meta else ""
    text = "\n".join(
        [
            f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n",
            f"# {folder.name}\n",
            f"A sentence encoder saved with sentcl{origin}. Pooler `{pooler}` "
            f"({pooler_info(pooler).description}); {dim}-dimensional embeddings"
            + (" of unit length" if normalize else "")
            + f", compared by cosine similarity; inputs truncated at {max_length} tokens.\n",
            *use_section(str(folder), pooler, head, st_folder),
        ]
    )
    return atomic_write_text(folder / CARD_FILE, text)


def write_model_card(folder: str | Path, config: Mapping[str, Any], **kwargs: Any) -> Path:
    """Render the card (``render_card`` arguments) into ``folder/README.md`` atomically; the folder's name
    is the model's name in the card unless ``name=`` is given."""
    folder = Path(folder)
    name = kwargs.pop("name", None) or folder.name
    kwargs.setdefault("load_path", str(folder))
    # model.pooler may be null (the start model's own): the saved folder says which one it resolved to
    if kwargs.get("pooler") is None and (folder / "sentcl.json").is_file():
        kwargs["pooler"] = json.loads((folder / "sentcl.json").read_text(encoding="utf-8")).get("pooler")
    text = render_card(config, name, st_folder=is_st_folder(folder), **kwargs)
    return atomic_write_text(folder / CARD_FILE, text)


def read_card_metadata(path: str | Path) -> dict[str, Any]:
    """The YAML front matter of a model card (``---`` ... ``---`` at the top)."""
    text = Path(path).read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        raise ValueError(f"{path}: a model card starts with a '---' line (YAML front matter)")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise ValueError(f"{path}: the YAML front matter has no closing '---' line")
    return load_yaml_text(text[4:end], f"{path}: the YAML front matter")  # sentcl's one YAML reader


def dev_history(metrics_file: Path, dev_task: str) -> list[tuple[int, float]]:
    """(step, score) of every finite dev evaluation in a run's metrics.jsonl, last one per step."""
    found: dict[int, float] = {}
    if Path(metrics_file).is_file():
        for line in Path(metrics_file).read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            if record.get("event") == "eval" and isinstance(record.get(dev_task), int | float):
                found[int(record["step"])] = float(record[dev_task])
    return sorted(found.items())


def write_run_card(
    folder: Path, config: Mapping[str, Any], run_dir: Path, load_path: Path, **kwargs: Any
) -> Path:
    """The card of a training run's model folder: the run's name, its dev history from metrics.jsonl."""
    history = dev_history(Path(run_dir) / "metrics.jsonl", config["eval"]["dev_task"])
    return write_model_card(
        folder, config, name=Path(run_dir).name, load_path=str(load_path), dev_history=history, **kwargs
    )
