#!/usr/bin/env bash
# `sentcl shrink all-MiniLM-L6-v2 --budget $BUDGET` (10x unless BUDGET is set) for real, one thread, a modest step count; the run's table,
# plot and record are copied under bench/results/shrink/ with the whole command's CPU and wall time
# (GNU time: user + sys seconds). Resumable: run it again after a kill. From the repository root:
#   bash bench/shrink_minilm.sh            # extra arguments go to sentcl shrink
#   BUDGET=100x bash bench/shrink_minilm.sh
set -euo pipefail
BUDGET=${BUDGET:-10x}
OUT=${OUT:-runs/shrink-minilm-$BUDGET}
RES=bench/results/shrink
mkdir -p "$RES" runs
/usr/bin/time -v -o "$RES/minilm-$BUDGET.time.txt" python -m sentcl.cli shrink all-MiniLM-L6-v2 "$OUT" \
  --budget "$BUDGET" --tasks sts --threads 1 --corpus-sentences 10000 --layer-steps 300 --static-steps 1000 "$@" \
  > "runs/shrink-minilm-$BUDGET.log" 2>&1
for f in pareto.md pareto.json pareto.png shrink.json; do cp "$OUT/$f" "$RES/minilm-$BUDGET-$f"; done
