#!/usr/bin/python3
"""Kernel Tuner's own strategies on recorded tuning spaces, as peers for search-bench.

Runs a strategy of Kernel Tuner (its `kernel_tuner/strategies/NAME.py`, unchanged, from a checkout given
with --kernel-tuner) against each Kernel Tuner cachefile with the same budgets and repeats as
`autotune search-bench`, and writes the same trace format:
    {"<parent-dir>/<file-stem>": [[v1, v2, ...], ...]}   (null for a failure)

The strategy runs as it does in Kernel Tuner's simulation mode: its search space is Kernel Tuner's
`Searchspace` built from the cachefile's records (`from_cache`), and a stand-in for its simulation runner
serves each configuration from the records. As there, only a configuration's first evaluation counts
towards the budget (`max_fevals`, the search-bench budget), a failed record costs an evaluation and
returns `sys.float_info.max` to the strategy, and a configuration outside the records is an invalid
configuration that costs nothing. The trace is the sequence of first evaluations. A strategy that returns
before its budget is spent ends its run there, as a Kernel Tuner run would; the score holds its best.

Kernel Tuner is not installed here: its package is read from the checkout without its `__init__` (which
imports the compilers' back ends), and the constraint solver it imports for building spaces from
restrictions (python-constraint2, not in Debian) is replaced by a stub, since a space built from a
cachefile needs no solver. Its other dependencies are Debian's python3-numpy, and python3-scipy for the
strategies built on SciPy (dual_annealing, basinhopping, minimize); `scripts/setup.sh --kernel-tuner`
installs them.

    /usr/bin/python3 bench/search_kerneltuner.py FILES --kernel-tuner PATH --strategy genetic_algorithm \\
        --budget auto --repeats 10 --json OUT
"""
import argparse
import functools
import importlib
import os
import random
import sys
import types

import numpy

import peer_runs

KERNEL_TUNER = None  # the checkout's kernel_tuner/ directory, set in each process by load_kernel_tuner


def load_kernel_tuner(package_dir):
    """Makes `kernel_tuner.*` importable from `package_dir` (a checkout's kernel_tuner/ directory)."""
    global KERNEL_TUNER
    if KERNEL_TUNER == package_dir:
        return
    constraint = types.ModuleType("constraint")

    class Unavailable:
        def __init__(self, *args, **kwargs):
            raise RuntimeError("search_kerneltuner: building a space from restrictions needs python-constraint2")

    def stub(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (Unavailable,), {})

    constraint.__getattr__ = stub
    sys.modules["constraint"] = constraint
    package = types.ModuleType("kernel_tuner")
    package.__path__ = [package_dir]
    sys.modules["kernel_tuner"] = package
    KERNEL_TUNER = package_dir


class RecordedRunner:
    """Kernel Tuner's simulation runner, reduced to what a strategy sees: each configuration served from
    the records, a configuration's first evaluation counted against the budget and added to the trace."""

    def __init__(self, keys, table, util):
        self.keys, self.table, self.util = keys, table, util
        # The device's thread limit, which bayes_opt reads; the records already hold only what ran.
        self.dev = types.SimpleNamespace(max_threads=1 << 30)
        self.visited = set()
        self.trace = []

    def add_strategy_time(self, seconds):
        pass

    def run(self, configurations, tuning_options):
        results = []
        for config in configurations:
            if tuning_options.budget.is_done():
                results.append(None)
                continue
            config = tuple(config)
            result = dict(zip(self.keys, config))
            if config not in self.table:
                result["__error__"] = self.util.InvalidConfig()
                results.append(result)
                continue
            value = self.table[config]
            if config not in self.visited:
                self.visited.add(config)
                tuning_options.budget.add_evaluations(1)
                self.trace.append(value)
            if value is None:
                result["__error__"] = self.util.RuntimeFailedConfig()
            else:
                result["time"] = value
            results.append(result)
        return results


@functools.lru_cache(maxsize=8)
def cache_records(path):
    """The cachefile's records as Kernel Tuner's `Searchspace(from_cache=...)` reads them, built once per
    process (a space of a budget of 2 has thousands of runs). `Searchspace` copies what it keeps, so the
    runs share them."""
    keys, _, table = peer_runs.recorded(path)
    return {",".join(str(v) for v in config): dict(zip(keys, config)) for config in table}


def run(package_dir, strategy, options, path, budget, seed):
    load_kernel_tuner(package_dir)
    util = importlib.import_module("kernel_tuner.util")
    searchspace_module = importlib.import_module("kernel_tuner.searchspace")
    module = importlib.import_module("kernel_tuner.strategies." + strategy)
    keys, tune_params, table = peer_runs.recorded(path)
    tune_params = {k: tune_params[k] for k in keys}
    records = cache_records(path)
    random.seed(seed)
    numpy.random.seed(seed)
    space = searchspace_module.Searchspace(None, None, None, from_cache={"tune_params": tune_params, "cache": records})
    runner = RecordedRunner(keys, table, util)
    options = dict(options, max_fevals=budget)
    tuning_options = Options(
        strategy_options=Options(options),
        objective=["time"],
        objective_higher_is_better=[False],
        budget=util.TuningBudget(None, min(budget, len(table))),
        verbose=False,
        tune_params=tune_params,
        restrictions=[],
        metrics=None,
        cache={},
        eps=1,
    )
    try:
        module.tune(space, runner, tuning_options)
    except util.StopCriterionReached:
        pass
    return runner.trace


class Options(dict):
    """Kernel Tuner's read-only options (kernel_tuner.interface.Options, which cannot be imported
    without the compilers' back ends): a dict whose keys are also attributes."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __deepcopy__(self, _):
        return self


def run_task(task):
    return run(*task)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    peer_runs.add_arguments(parser)
    parser.add_argument("--kernel-tuner", required=True,
                        help="a Kernel Tuner checkout (the directory holding kernel_tuner/)")
    parser.add_argument("--strategy", required=True, help="a module of kernel_tuner/strategies/")
    parser.add_argument("--options", default="{}", help="the strategy's options as JSON")
    args = parser.parse_args()
    package_dir = os.path.join(os.path.abspath(args.kernel_tuner), "kernel_tuner")
    strategy_file = os.path.join(package_dir, "strategies", args.strategy + ".py")
    if not os.path.isfile(strategy_file):
        sys.exit(f"search_kerneltuner: --strategy {args.strategy}: no {strategy_file}")
    options = peer_runs.options_object(args.options, "search_kerneltuner")
    peer_runs.run_all(args, "search_kerneltuner", run_task, leading=(package_dir, args.strategy, options))


if __name__ == "__main__":
    main()
