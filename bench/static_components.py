"""How many common components a static student should lose: k chosen on STS-B dev, reported on the seven tasks.

A static folder built without the removal (``sentcl distill-static ... --set components=0``) is read once; for
each k the recipe's step (``sentcl.methods.static_components``: the mean and top k directions of its sentence
vectors of the corpus, folded into the table) is applied to its table, and the result is scored on STS-B dev
(the choice: the recipe's corpus leaves it out) and on the seven STS tasks (the report). k = 0 is the folder as
built. One thread.

    python -m bench.static_components runs/static-final/static-256 runs/static-final/static-128 \\
        --output bench/results/static_components.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import torch

from sentcl.evaluation.runner import evaluate, headline
from sentcl.files.paths import resolve_data_dir
from sentcl.methods.static_components import common_components, remove_components
from sentcl.methods.static_student import corpus_sentences, read_summary
from sentcl.modeling.open import open_model
from sentcl.modeling.static import bag_mean
from sentcl.similarity import unit_rows


def sweep(folder: str, ks: list[int], data: Path) -> dict[str, Any]:
    """Each k's STS-B dev and seven-task averages for one static folder built with components=0."""
    model = open_model(folder)
    summary = read_summary(folder)
    if (summary.get("removed_components") or {}).get("components"):
        raise SystemExit(f"{folder}: its components are removed already; build it with --set components=0")
    recipe = summary["recipe"]
    sentences = corpus_sentences(data, recipe.get("max_sentences"))
    lists = model.token_rows(sentences, model.max_length).lists()
    rows = []
    for k in ks:
        table = (
            model.table
            if k == 0
            else remove_components(model.table, common_components(model.table, lists, k))
        )

        def encode(texts: list[str], t: Any = table) -> Any:
            return unit_rows(bag_mean(t, model.token_rows(texts, model.max_length)))

        found = evaluate(encode, data, ["stsb_dev", "sts"], progress=False)
        row = {
            "k": k,
            "stsb_dev": headline("stsb_dev", found["stsb_dev"]),
            "sts_avg": headline("sts", found["sts"]),
        }
        rows.append(row)
        print(folder, json.dumps(row), flush=True)
    best = max(rows, key=lambda r: r["stsb_dev"])
    return {"folder": folder, "corpus_sentences": len(sentences), "rows": rows, "chosen_on_dev": best["k"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="static folders built with components=0")
    parser.add_argument("--ks", default="0,1,2,3,4,5,6,8", help="comma-separated k")
    parser.add_argument("--data-dir")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = resolve_data_dir(args.data_dir)
    ks = [int(k) for k in args.ks.split(",")]
    result = {
        "command": " ".join(["python -m bench.static_components", *map(shlex.quote, sys.argv[1:])]),
        "models": [sweep(folder, ks, data) for folder in args.folders],
    }
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
