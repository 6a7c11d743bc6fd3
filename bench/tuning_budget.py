"""Shared by the bench scripts: a recorded space read from its cachefile, and B(p) of it
(../shared/data/tuning/README.md; search/scoring.hpp has the C++ one): the evaluations random search
needs, in expectation, to come a fraction p of the way from the median to the optimum."""
import json
import math
import statistics


def read_cachefile(path):
    """(keys, tune_params, table): table maps each configuration, a tuple of its values in the order
    of keys, to its objective, or None where it failed (anything but a number, as in
    search/recorded_space.cpp)."""
    with open(path) as f:
        doc = json.load(f)
    keys = doc["tune_params_keys"]
    objective = doc.get("objective", "time")
    table = {}
    for record in doc["cache"].values():
        value = record[objective]
        table[tuple(record[k] for k in keys)] = value if isinstance(value, (int, float)) else None
    return keys, doc["tune_params"], table


def random_search_budget(values, p=0.95, cap=300):
    """B(p) over the valid values (lower is better), capped at `cap` (None: uncapped) and at least 1."""
    w = sorted(values, reverse=True)
    n = len(w)
    f_opt, f_med = w[-1], statistics.median(w)
    threshold = f_opt + (f_med - f_opt) * (1 - p)
    i = next((i for i, v in enumerate(w) if v <= threshold), n - 1)
    b = max(1, math.ceil(i / (n + 1 - i)))
    return b if cap is None else min(cap, b)
