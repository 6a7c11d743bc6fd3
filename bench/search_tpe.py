#!/usr/bin/python3
"""Optuna's TPE sampler on recorded tuning spaces, as the peer for search-bench.

Runs TPE (optuna.samplers.TPESampler with its defaults, seed S + r for repeat r)
against each Kernel Tuner cachefile with the same budgets and repeats as
`autotune search-bench`, and writes the same trace format:
    {"<parent-dir>/<file-stem>": [[v1, v2, ...], ...]}   (null for a failure)

Every parameter of `tune_params` with more than one value is a categorical
choice. A suggested configuration that failed in the recording costs one
evaluation (null in the trace) and is told a penalty; one outside the recorded
space is told the penalty without counting as an evaluation (as in
search-bench, where such configurations are never proposed). A repeated
suggestion is told its known value again without counting. The penalty is
ten times the worst recorded valid value; TPE splits good from bad by rank, so
any value worse than every valid one acts the same.

Use Debian's interpreter, which has optuna:  /usr/bin/python3 bench/search_tpe.py ...
"""
import argparse
import json
import multiprocessing
import os
import sys

import optuna

from tuning_budget import random_search_budget, read_cachefile


def load(path):
    return (load_name(path), *read_cachefile(path))


def run(keys, tune_params, table, budget, seed, penalty):
    sampler = optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    varying = [k for k in keys if len(tune_params[k]) > 1]
    trace, known = [], {}
    attempts = 0
    max_attempts = 50 * budget + 1000
    while len(trace) < budget and attempts < max_attempts and len(known) < len(table):
        attempts += 1
        trial = study.ask()
        chosen = {k: trial.suggest_categorical(k, tune_params[k]) for k in varying}
        config = tuple(chosen[k] if k in chosen else tune_params[k][0] for k in keys)
        if config not in table:
            study.tell(trial, penalty)
            continue
        value = table[config]
        if config in known:
            study.tell(trial, penalty if value is None else value)
            continue
        known[config] = value
        trace.append(value)
        study.tell(trial, penalty if value is None else value)
    return trace


def load_name(path):
    return os.path.basename(os.path.dirname(os.path.abspath(path))) + "/" + os.path.splitext(os.path.basename(path))[0]


def run_task(task):
    path, budget, seed = task
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    _, keys, tune_params, table = load(path)
    valid = [v for v in table.values() if v is not None]
    return run(keys, tune_params, table, budget, seed, 10.0 * max(valid))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cachefiles", nargs="+")
    parser.add_argument("--budget", required=True, help="a positive integer or 'auto' (B(0.95) capped at 300)")
    parser.add_argument("--repeats", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", required=True, help="output trace file")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs in parallel (processes)")
    args = parser.parse_args()
    if args.repeats < 1:
        sys.exit("search_tpe: --repeats must be at least 1")
    if args.budget != "auto" and (not args.budget.isdigit() or int(args.budget) < 1):
        sys.exit("search_tpe: --budget must be a positive integer or 'auto'")
    tasks, names = [], []
    for path in args.cachefiles:
        name, keys, tune_params, table = load(path)
        valid = [v for v in table.values() if v is not None]
        budget = random_search_budget(valid) if args.budget == "auto" else int(args.budget)
        names.append(name)
        tasks += [(path, budget, args.seed + r) for r in range(args.repeats)]
        print(f"search_tpe: {name}: {args.repeats} runs of {budget} evaluations", file=sys.stderr)
    # Runs are independent (one seed each), so they may run in any order and in parallel.
    with multiprocessing.Pool(max(1, args.jobs)) as pool:
        traces = pool.map(run_task, tasks, chunksize=1)
    out = {name: [] for name in names}
    for (path, _, _), trace in zip(tasks, traces):
        out[load_name(path)].append(trace)
    with open(args.json, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
