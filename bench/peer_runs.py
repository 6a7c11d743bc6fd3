"""Shared by the peers of `autotune search-bench` (bench/search_tpe.py, bench/search_kerneltuner.py): their
common arguments, and their runs on each cachefile with search-bench's budgets and repeats, written in its
trace format {"<parent-dir>/<file-stem>": [[v1, v2, ...], ...]} (null for a failure)."""
import functools
import json
import multiprocessing
import os
import sys

from tuning_budget import random_search_budget, read_cachefile


def add_arguments(parser):
    parser.add_argument("cachefiles", nargs="+")
    parser.add_argument("--budget", required=True, help="a positive integer or 'auto' (B(0.95) capped at 300)")
    parser.add_argument("--repeats", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", required=True, help="output trace file")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs in parallel (processes)")


@functools.lru_cache(maxsize=8)
def recorded(path):
    """read_cachefile(path), read once per process: every run of a space needs it, and a space of a budget
    of 2 has thousands of runs. Shared between runs, so read only."""
    return read_cachefile(path)


def options_object(text, program):
    """A peer's --options: a JSON object, or one line naming `program` and a non-zero exit."""
    try:
        options = json.loads(text)
    except json.JSONDecodeError as e:
        sys.exit(f"{program}: --options: not JSON ({e})")
    if not isinstance(options, dict):
        sys.exit(f"{program}: --options: expected a JSON object")
    return options


def space_name(path):
    """search-bench's name of a space: its cachefile's parent directory and stem."""
    return os.path.basename(os.path.dirname(os.path.abspath(path))) + "/" + os.path.splitext(os.path.basename(path))[0]


def run_all(args, program, run_task, leading=()):
    """Runs `run_task((*leading, path, budget, seed))`, which returns a run's trace, for every cachefile and
    repeat (seed `--seed` + repeat), in `--jobs` processes, and writes the traces to `--json`."""
    if args.repeats < 1:
        sys.exit(f"{program}: --repeats must be at least 1")
    if args.budget != "auto" and (not args.budget.isdigit() or int(args.budget) < 1):
        sys.exit(f"{program}: --budget must be a positive integer or 'auto'")
    tasks, names = [], []
    for path in args.cachefiles:
        _, _, table = recorded(path)
        valid = [v for v in table.values() if v is not None]
        budget = random_search_budget(valid) if args.budget == "auto" else int(args.budget)
        names.append(space_name(path))
        tasks += [(*leading, path, budget, args.seed + r) for r in range(args.repeats)]
        print(f"{program}: {names[-1]}: {args.repeats} runs of {budget} evaluations", file=sys.stderr)
    # Runs are independent (one seed each), so they may run in any order and in parallel.
    with multiprocessing.Pool(max(1, args.jobs)) as pool:
        traces = pool.map(run_task, tasks, chunksize=1)
    out = {name: [] for name in names}
    for task, trace in zip(tasks, traces):
        out[space_name(task[len(leading)])].append(trace)
    with open(args.json, "w") as f:
        json.dump(out, f)
