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

import optuna

import peer_runs


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


def run_task(task):
    path, budget, seed = task
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    keys, tune_params, table = peer_runs.recorded(path)
    valid = [v for v in table.values() if v is not None]
    return run(keys, tune_params, table, budget, seed, 10.0 * max(valid))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    peer_runs.add_arguments(parser)
    peer_runs.run_all(parser.parse_args(), "search_tpe", run_task)


if __name__ == "__main__":
    main()
