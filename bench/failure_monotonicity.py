#!/usr/bin/env python3
"""Whether a space's failures grow with its parameters: bayes's `monotone_failures` rule, checked.

    python3 bench/failure_monotonicity.py DIR

For every space with failures under DIR (DIR/<kernel>/<device>.json, as bench/spaces/gather.py writes
them), each parameter's values taken in the order the file lists them: how many successful
configurations lie at or above a failed one in every parameter (the configurations the rule would
wrongly pass over, had that failure been measured), whether the optimum is among them, and how many
of the best 1% are. docs/search.md ("Failures grow with the parameters") reads it.
"""
import glob
import os
import sys

from tuning_budget import read_cachefile


def load(path):
    """(positions, value) per configuration, each value's position in its parameter's listed order;
    value None where the configuration failed."""
    keys, tune_params, table = read_cachefile(path)
    order = [{value: i for i, value in enumerate(tune_params[key])} for key in keys]
    return [(tuple(o[v] for o, v in zip(order, configuration)), value)
            for configuration, value in table.items()]


def at_or_above(a, b):
    return all(x >= y for x, y in zip(a, b))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    print("%-36s %8s %14s %22s %8s %10s" % ("space", "failed", "configurations", "successes above one",
                                          "optimum", "best 1%"))
    for path in sorted(glob.glob(os.path.join(root, "*", "*.json"))):
        configurations = load(path)
        failures = [c for c, v in configurations if v is None]
        if not failures:
            continue
        successes = sorted((v, c) for c, v in configurations if v is not None)
        above = {c for _, c in successes if any(at_or_above(c, f) for f in failures)}
        best = successes[:max(1, len(successes) // 100)]
        name = os.path.relpath(path, root)[:-len(".json")]
        print("%-36s %8d %14d %14d (%5.1f%%) %8s %5d of %3d" % (
            name, len(failures), len(configurations), len(above), 100 * len(above) / len(successes),
            "above" if successes[0][1] in above else "not", sum(c in above for _, c in best), len(best)))


if __name__ == "__main__":
    main()
