#!/usr/bin/env bash
# Short CPU run of every CPU recipe from the offline all-MiniLM-L6-v2: STS-B dev of the start model and of
# the best checkpoint, written to docs/results/recipes.md. Usage: scripts/survey_recipes.sh [STEPS] [BATCH]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-40}
batch=${2:-32}
out=runs/survey
mkdir -p "$out" docs/results
for recipe in demo sup_simcse_snli dropout_fixed augment_crop consert_token_cutoff next_sentence quick_thoughts \
              cutoff_triplet unsup_mlm; do
  [ -f "$out/$recipe/results.json" ] && continue  # resumable
  .venv/bin/sentcl train --config "configs/$recipe.yaml" --output-dir "$out/$recipe" \
    --set training.max_steps="$steps" --set training.batch_size="$batch" --set training.eval_steps="$((steps / 2))" \
    --set training.save_steps=0 --set training.progress=false --set eval.final_tasks='[stsb_dev]' \
    --set eval.compare_with_start=true
done
.venv/bin/python - "$out" "$steps" "$batch" <<'PY'
import json, sys
from pathlib import Path
out, steps, batch = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
rows = ["| recipe | method | start STS-B dev | after | change | best step |", "|---|---|---:|---:|---:|---:|"]
for run in sorted(p for p in out.iterdir() if (p / "results.json").is_file()):
    res = json.loads((run / "results.json").read_text())
    start = json.loads((run / "start_results.json").read_text())["stsb_dev"]["STSBenchmark"]["spearman"]
    after = res["results"]["stsb_dev"]["STSBenchmark"]["spearman"]
    cfg = json.loads((run / "config.json").read_text())
    rows.append(f"| {run.name} | {cfg['objective']['name']} | {start:.2f} | {after:.2f} | {after - start:+.2f} | {res['best_step']} |")
text = (f"# Every CPU recipe, one short run each\n\n{steps} steps of batch {batch} from all-MiniLM-L6-v2 "
        f"(each recipe's own pooler, temperature, lr), STS-B dev (Spearman x 100) every {int(steps) // 2} steps, "
        "best kept.\nCommand: `scripts/survey_recipes.sh " + f"{steps} {batch}`\n\n" + "\n".join(rows) + "\n")
Path("docs/results/recipes.md").write_text(text)
print(text)
PY
