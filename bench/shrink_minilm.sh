#!/usr/bin/env bash
# `sentcl shrink all-MiniLM-L6-v2 --budget 10x` for real, one thread, a modest step count; the run's table,
# plot and record are copied under bench/results/shrink/ with the whole command's CPU and wall time
# (GNU time: user + sys seconds). Resumable: run it again after a kill. From the repository root:
#   bash bench/shrink_minilm.sh            # extra arguments go to sentcl shrink
set -euo pipefail
OUT=${OUT:-runs/shrink-minilm-10x}
RES=bench/results/shrink
mkdir -p "$RES" runs
/usr/bin/time -v -o "$RES/minilm-10x.time.txt" python -m sentcl.cli shrink all-MiniLM-L6-v2 "$OUT" \
  --budget 10x --tasks sts --threads 1 --corpus-sentences 10000 --layer-steps 300 --static-steps 1000 "$@" \
  > runs/shrink-minilm-10x.log 2>&1
for f in pareto.md pareto.json pareto.png shrink.json; do cp "$OUT/$f" "$RES/minilm-10x-$f"; done
