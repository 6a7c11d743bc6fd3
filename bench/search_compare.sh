#!/usr/bin/env bash
# Side-by-side scores of the search strategies on recorded GPU spaces against
# Optuna's TPE: each strategy runs each space for its B(0.95) budget capped at
# 300, REPEATS times (seeds 1..REPEATS); the traces are kept in OUT_DIR and
# scored by `autotune search-bench --score`.
#
#   bench/search_compare.sh [REPEATS=10]
#   bench/search_compare.sh --leave-one-out [REPEATS=10]
#   env: AUTOTUNE_BIN (default build/autotune), OUT_DIR (default build/search-compare),
#        STRATEGIES (default "bayes genetic annealing random"),
#        DATA (default ../shared/data/tuning: every Kernel Tuner cachefile under it is a space)
#
# --leave-one-out scores generalization rather than fit (bench/search_loo.py):
# each strategy's option sets (CANDIDATES, default bench/search_candidates.json)
# are chosen on all spaces but one and scored on that one, in turn; it prints
# the held-out mean, the worst space and the spread over repeats beside the
# in-sample mean, and TPE.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--leave-one-out" ]]; then
  exec python3 bench/search_loo.py --repeats "${2:-10}" --data "${DATA:-../shared/data/tuning}" \
    --candidates "${CANDIDATES:-bench/search_candidates.json}" --out "${OUT_DIR:-build/search-loo}" --tpe
fi
repeats=${1:-10}
bin=${AUTOTUNE_BIN:-build/autotune}
out=${OUT_DIR:-build/search-compare}
data=${DATA:-../shared/data/tuning}
strategies=${STRATEGIES:-bayes genetic annealing random}
mkdir -p "$out"
mapfile -t files < <(grep -rl --include='*.json' '"tune_params_keys"' "$data" | sort)
if (( ${#files[@]} == 0 )); then echo "search_compare: no Kernel Tuner cachefile under $data" >&2; exit 2; fi

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
