#!/usr/bin/env bash
# Side-by-side scores of the search strategies on the recorded GPU spaces
# (../shared/data/tuning), against Optuna's TPE: each strategy runs each space
# for its B(0.95) budget capped at 300, REPEATS times (seeds 1..REPEATS); the
# traces are kept in OUT_DIR and scored by `autotune search-bench --score`.
#
#   bench/search_compare.sh [REPEATS=10]
#   env: AUTOTUNE_BIN (default build/autotune), OUT_DIR (default build/search-compare),
#        STRATEGIES (default "bayes genetic annealing random"), DATA (default ../shared/data/tuning)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-10}
bin=${AUTOTUNE_BIN:-build/autotune}
out=${OUT_DIR:-build/search-compare}
data=${DATA:-../shared/data/tuning}
strategies=${STRATEGIES:-bayes genetic annealing random}
mkdir -p "$out"
files=("$data"/convolution/RTX_3090.json "$data"/convolution/RTX_Titan.json "$data"/convolution_hip/A4000.json
       "$data"/convolution_hip/W6600.json "$data"/dedispersion/A4000.json "$data"/pnpoly/RTX_3090.json)

for strategy in $strategies; do
  if [[ ! -s "$out/$strategy.json" ]]; then
    start=$(date +%s)
    "$bin" search-bench "${files[@]}" --strategy "$strategy" --budget auto --repeats "$repeats" --json "$out/$strategy.json"
    echo "$strategy: $(( $(date +%s) - start )) s" >&2
  fi
done
if [[ ! -s "$out/tpe.json" ]]; then
  start=$(date +%s)
  /usr/bin/python3 bench/search_tpe.py "${files[@]}" --budget auto --repeats "$repeats" --jobs "${TPE_JOBS:-$(nproc)}" --json "$out/tpe.json" 2>/dev/null
  echo "tpe: $(( $(date +%s) - start )) s" >&2
fi

# One column per strategy: the score per space, then the mean.
for name in $strategies tpe; do
  "$bin" search-bench "${files[@]}" --score "$out/$name.json" | awk -v s="$name" 'NR > 2 { print s "\t" $1 "\t" $(NF-1) }'
done | awk -F'\t' '
  { if (!($2 in seen)) { seen[$2] = 1; rows[++n] = $2 } if (!($1 in cols)) { cols[$1] = 1; order[++m] = $1 } v[$1, $2] = $3 }
  END {
    printf "%-26s", "space"; for (j = 1; j <= m; j++) printf "%11s", order[j]; printf "\n"
    for (i = 1; i <= n; i++) {
      label = rows[i]; if (label == "overall") label = "mean score"
      printf "%-26s", label; for (j = 1; j <= m; j++) printf "%11s", v[order[j], rows[i]]; printf "\n"
    }
  }'
