#!/usr/bin/env python3
"""Smaller recorded spaces cut from larger ones, to score search strategies at small budgets.

    bench/slice_spaces.py SOURCE_DIR OUT_DIR [--min-budget 8] [--max-budget 50] [--min-size 200] [--seed 1]

Every Kernel Tuner cachefile under SOURCE_DIR is cut along each of its parameters: fixing the parameter to
one of its values leaves a space of the others, whose configurations and measurements are the recorded
ones (nothing is re-measured or interpolated). A slice is kept when it has at least --min-size valid
configurations and its budget B(0.95) (../shared/data/tuning/README.md) lies in [--min-budget,
--max-budget]. Of the values that qualify for a parameter, one is drawn (seeded), so each slice shows
a different shape. Each is written as a cachefile, OUT_DIR/<parent>_<stem>/<parameter>_<value>.json,
with the fixed parameter's tune_params reduced to that value, so `autotune search-bench` and
bench/search_compare.sh (DATA=OUT_DIR) take them as they are.
"""
import argparse
import json
import os
import random
import sys

from tuning_budget import random_search_budget


def valid_times(cache):
    return [r["time"] for r in cache.values() if isinstance(r.get("time"), (int, float))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source")
    parser.add_argument("out")
    parser.add_argument("--min-budget", type=int, default=8)
    parser.add_argument("--max-budget", type=int, default=50)
    parser.add_argument("--min-size", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    written = 0
    for parent, _, names in sorted(os.walk(args.source)):
        for name in sorted(names):
            if not name.endswith(".json"):
                continue
            path = os.path.join(parent, name)
            with open(path) as f:
                document = json.load(f)
            if "tune_params_keys" not in document:
                continue
            label = f"{os.path.basename(parent)}_{name[:-5]}"
            for parameter in document["tune_params_keys"]:
                if len(document["tune_params"][parameter]) < 2:
                    continue  # a constant: nothing to cut
                qualifying = []
                for value in document["tune_params"][parameter]:
                    cache = {k: r for k, r in document["cache"].items() if r.get(parameter) == value}
                    times = valid_times(cache)
                    if len(times) < args.min_size:
                        continue
                    b95 = random_search_budget(times, cap=None)
                    if args.min_budget <= b95 <= args.max_budget:
                        qualifying.append((value, cache, b95, len(times)))
                if len(qualifying) == 0:
                    continue
                value, cache, b95, size = rng.choice(qualifying)
                sliced = dict(document, cache=cache, tune_params=dict(document["tune_params"], **{parameter: [value]}))
                os.makedirs(os.path.join(args.out, label), exist_ok=True)
                with open(os.path.join(args.out, label, f"{parameter}_{value}.json"), "w") as f:
                    json.dump(sliced, f)
                print(f"{label}/{parameter}_{value}: {size} valid configurations, B(0.95) = {b95}")
                written += 1
    if written == 0:
        sys.exit(f"slice_spaces: no slice of a cachefile under {args.source} qualifies")


if __name__ == "__main__":
    main()
