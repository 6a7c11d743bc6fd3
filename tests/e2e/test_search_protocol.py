"""The evaluation protocol on recorded spaces: bench/spaces/gather.py builds a split's spaces from where
they come from and refuses one whose checksum differs from the split file's; bench/search_protocol.py
scores a strategy on a split and reports the mean, the worst space and the spaces below random search
by more than two standard errors, from the scores search-bench writes. Runs on a tiny split of two of
the simulator's committed spaces, so it needs no network."""
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys

from loop_support import BIN, SOURCE, check, tempdir

SPACES = os.path.join(SOURCE, "bench", "spaces")
SMALL = ["simulated/transpose_pe_trn2", "simulated/exp_tiled_trn2"]


def one_line(proc, *needles):
    """A refusal: a non-zero exit and one line on stderr holding every needle."""
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode != 0, f"refused: {proc.stderr}")
    check(len(lines) == 1, f"one line expected: {proc.stderr!r}")
    for needle in needles:
        check(needle in lines[0], f"{needle!r} not in {lines[0]!r}")


def tiny_split(tmp):
    with open(os.path.join(SPACES, "splits.json")) as f:
        splits = json.load(f)
    every = {s["name"]: s for spaces in splits["splits"].values() for s in spaces}
    tiny = {"splits": {"tiny": [every[name] for name in SMALL]}}
    path = os.path.join(tmp, "splits.json")
    with open(path, "w") as f:
        json.dump(tiny, f)
    return path, tiny


def gather(tmp, splits_path, tiny):
    data = os.path.join(tmp, "data")
    built = subprocess.run([sys.executable, os.path.join(SPACES, "gather.py"), data, "--splits", splits_path],
                           capture_output=True, text=True, timeout=120)
    check(built.returncode == 0, f"gather: {built.stderr}")
    for name in SMALL:
        with open(os.path.join(data, name + ".json")) as f:
            document = json.load(f)
        check("tune_params_keys" in document and len(document["cache"]) > 100, f"{name}: a cachefile")
    # A space whose checksum is not the recorded one is refused in one line.
    tampered = json.loads(json.dumps(tiny))
    tampered["splits"]["tiny"][0]["sha256"] = "0" * 64
    bad = os.path.join(tmp, "tampered.json")
    with open(bad, "w") as f:
        json.dump(tampered, f)
    refused = subprocess.run([sys.executable, os.path.join(SPACES, "gather.py"), os.path.join(tmp, "other"),
                              "--splits", bad], capture_output=True, text=True, timeout=120)
    check(refused.returncode != 0, "a changed space is refused")
    one_line(refused, SMALL[0], "SHA-256")
    return data


def conversions(tmp):
    """Kernel Tuner's list of results becomes a cachefile; a time at `failed_at` or above becomes a failure."""
    records = [{"block": b, "unroll": u, "time": 1.0 + b / 100 + u, "times": [1.0], "registers": 40}
               for b in (32, 64) for u in (0, 1, 2)]
    cachefile = {"tune_params_keys": ["block"], "tune_params": {"block": [32, 64, 128]}, "objective": "time",
                 "cache": {str(b): {"block": b, "time": 1e20 if b == 128 else 2.0 + b} for b in (32, 64, 128)}}
    files = {"records.json": records, "cachefile.json": cachefile}
    for name, document in files.items():
        with open(os.path.join(tmp, name), "w") as f:
            json.dump(document, f)
    spaces = [{"name": "converted/records", "file": os.path.join(tmp, "records.json"), "convert": "records",
               "parameters": ["block", "unroll"], "device": "D", "kernel": "K"},
              {"name": "converted/sentinel", "file": os.path.join(tmp, "cachefile.json"), "failed_at": 1e20}]
    splits_path = os.path.join(tmp, "converted.json")
    with open(splits_path, "w") as f:
        json.dump({"splits": {"converted": spaces}}, f)
    out = os.path.join(tmp, "converted")
    command = [sys.executable, os.path.join(SPACES, "gather.py"), out, "--splits", splits_path]
    built = subprocess.run(command + ["--write-checksums"], capture_output=True, text=True, timeout=60)
    check(built.returncode == 0, f"gather: {built.stderr}")
    with open(os.path.join(out, "converted", "records.json")) as f:
        converted = json.load(f)
    check(converted["tune_params"] == {"block": [32, 64], "unroll": [0, 1, 2]} and converted["device_name"] == "D",
          f"the records' parameters and device: {converted}")
    check(converted["cache"]["64,2"] == {"block": 64, "unroll": 2, "time": 3.64, "times": [1.0]},
          f"a record keeps its parameters and times: {converted['cache']['64,2']}")
    with open(os.path.join(out, "converted", "sentinel.json")) as f:
        sentinel = json.load(f)["cache"]
    check(sentinel["128"]["time"] == "RuntimeFailedConfig" and sentinel["64"]["time"] == 66.0,
          f"only the time at failed_at fails: {sentinel}")
    # A configuration recorded twice is refused in one line.
    with open(os.path.join(tmp, "records.json"), "w") as f:
        json.dump(records + records[:1], f)
    twice = subprocess.run(command + ["--write-checksums"], capture_output=True, text=True, timeout=60)
    one_line(twice, "converted/records", "32,0", "twice")
    # A failure's name is kept as its time; a record without a time is refused in one line.
    with open(os.path.join(tmp, "records.json"), "w") as f:
        json.dump(records[:2] + [{"block": 64, "unroll": 0, "time": "CompileFailedConfig"}], f)
    failing = subprocess.run(command + ["--write-checksums"], capture_output=True, text=True, timeout=60)
    check(failing.returncode == 0, f"gather: {failing.stderr}")
    with open(os.path.join(out, "converted", "records.json")) as f:
        check(json.load(f)["cache"]["64,0"]["time"] == "CompileFailedConfig", "a failure stays a failure")
    with open(os.path.join(tmp, "records.json"), "w") as f:
        json.dump(records[:2] + [{"block": 64, "unroll": 0}], f)
    untimed = subprocess.run(command + ["--write-checksums"], capture_output=True, text=True, timeout=60)
    one_line(untimed, "converted/records", "a time", "'unroll': 0")


def protocol(tmp, splits_path, data):
    out, summary_path = os.path.join(tmp, "out"), os.path.join(tmp, "summary.json")
    command = [sys.executable, os.path.join(SOURCE, "bench", "search_protocol.py"), "--split", "tiny", "--splits",
               splits_path, "--data", data, "--strategy", "grid", "--repeats", "3", "--evaluations", "60", "--random", "--out", out,
               "--autotune", BIN, "--json", summary_path]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=600)
    check(ran.returncode == 0, f"search_protocol: {ran.stderr[-500:]}")
    result = json.load(open(summary_path))
    rows, summary = result["spaces"], result["summary"]
    check([r["space"] for r in rows] == SMALL, f"one row per space of the split: {rows}")
    # The figures are those of search-bench's scores: the grid's traces scored again here.
    scores_files = [n for n in os.listdir(out) if n.startswith("tiny-grid-") and n.endswith("-e60.scores.json")]
    check(len(scores_files) == 1, f"the grid's scores are kept: {os.listdir(out)}")
    scores = json.load(open(os.path.join(out, scores_files[0])))
    traces = json.load(open(os.path.join(out, scores_files[0].replace(".scores.", ".traces."))))
    for r in rows:
        # Equal evaluations: a space of budget B has max(3, ceil(60 / B)) runs, each of B evaluations.
        wanted = max(3, -(-60 // scores[r["space"]]["high_budget"]))
        check(r["repeats"] == wanted and len(traces[r["space"]]) == wanted, f"{r['space']}: {wanted} runs: {r}")
        check(all(len(run) == r["budget"] for run in traces[r["space"]]), f"{r['space']}: runs of the budget")
        check(abs(r["score"] - scores[r["space"]]["score"]) < 1e-12, f"{r['space']}: the score search-bench wrote")
        check(r["below_random"] == (r["score"] < -2 * scores[r["space"]]["bootstrap_se"]),
              f"{r['space']}: below random when more than two standard errors under 0: {r}")
    mean = sum(r["score"] for r in rows) / len(rows)
    check(abs(summary["mean"] - mean) < 1e-12, f"the mean over the split: {summary}")
    worst = min(rows, key=lambda r: r["score"])
    check(summary["worst"]["space"] == worst["space"], f"the worst space: {summary}")
    check(summary["below_random"] == sum(r["below_random"] for r in rows), f"the count below random: {summary}")
    mean_line = next(line for line in ran.stdout.splitlines() if line.startswith("mean score"))
    check(f"mean score {mean:.3f}" in mean_line and worst["space"] in mean_line, f"the summary printed:\n{ran.stdout}")
    # With --random, random search is run and scored beside it.
    check("random search (measured)" in ran.stdout and all("random" in r for r in rows),
          f"random search beside it:\n{ran.stdout}")
    check(all(r["unscorable"] == (r["random_se"] > 1) for r in rows), f"unscorable where random's se > 1: {rows}")
    check(abs(summary["mean_se"] - sum(r["se"] ** 2 for r in rows) ** 0.5 / len(rows)) < 1e-12,
          f"the mean's standard error: {summary}")
    # Traces are kept per build: the same build only prints again; another one (a wrapper script here, whose
    # digest differs) measures again instead of scoring the former build's traces.
    again = subprocess.run(command, capture_output=True, text=True, timeout=600)
    check(again.returncode == 0 and "running grid" not in again.stderr and again.stdout == ran.stdout,
          f"the same build only prints: {again.stderr[-500:]}")
    wrapper = os.path.join(tmp, "autotune-wrapper")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec "{BIN}" "$@"\n')
    os.chmod(wrapper, 0o755)
    rebuilt = subprocess.run([wrapper if part == BIN else part for part in command], capture_output=True, text=True,
                             timeout=600)
    check(rebuilt.returncode == 0 and "running grid" in rebuilt.stderr and "running random" in rebuilt.stderr,
          f"another build runs again: {rebuilt.stderr[-500:]}")
    missing = subprocess.run([os.path.join(tmp, "nowhere") if part == BIN else part for part in command],
                             capture_output=True, text=True, timeout=60)
    one_line(missing, "--autotune", "not an executable")
    # At a fixed budget (--at, 20 by default; a space's budget where smaller): the median runs' best.
    spec = importlib.util.spec_from_file_location("search_protocol", command[1])
    search_protocol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(search_protocol)
    random_traces = json.load(open(os.path.join(out, next(
        n for n in os.listdir(out) if n.startswith("tiny-random-") and n.endswith("-e60.traces.json")))))
    for r in rows:
        check(r["at"] == min(20, r["budget"]), f"{r['space']}: compared after min(20, B) evaluations: {r}")
        check(r["best_at"] == statistics.median(search_protocol.best_after(traces[r["space"]], r["at"])) and
              r["random_best_at"] == statistics.median(search_protocol.best_after(random_traces[r["space"]], r["at"])),
              f"{r['space']}: the median runs' best after {r['at']}: {r}")
    check(summary["below_random_at"] == [r["space"] for r in rows if r["below_random_at"]],
          f"the spaces behind random search at the budget: {summary}")
    check(f"after 20 evaluations (a space's budget where smaller): grid's median run behind random search's "
          f"(97.5% bootstrap) on {len(summary['below_random_at'])}" in ran.stdout, f"printed:\n{ran.stdout}")
    # The comparison itself: runs always worse than random search's are behind it, never the other way.
    slow, fast = [[2.0, None, 3.0]] * 5, [[1.0, 1.5, None]] * 5
    check(search_protocol.chance_worse(slow, fast, 3) == 1.0 and search_protocol.chance_worse(fast, slow, 3) == 0.0,
          "chance_worse orders runs by their best")
    check(search_protocol.best_after([[None, None, 4.0]], 2) == [float("inf")], "a run that only failed has no best")
    # How far from the optimum a user who stops there is: the median run's best over the optimum, and the
    # share of runs within 5% of it; on spaces timed in ms only.
    for r in rows:
        entry = scores[r["space"]]
        with open(os.path.join(data, r["space"] + ".json")) as f:
            recorded = [c["time"] for c in json.load(f)["cache"].values() if not isinstance(c["time"], str)]
        check(entry["objective"] == "time" and entry["optimum"] == min(recorded),
              f"{r['space']}: search-bench gives the objective and the best recorded value: {entry}")
        check((r["slower_at"], r["within_at"]) == search_protocol.distance_at(traces[r["space"]], r["at"], entry) and
              (r["random_slower_at"], r["random_within_at"]) ==
              search_protocol.distance_at(random_traces[r["space"]], r["at"], entry), f"{r['space']}: {r}")
    check(abs(summary["within_at"] - statistics.mean(r["within_at"] for r in rows)) < 1e-12 and
          summary["timed_at"] == len(rows), f"the share within 5%, over the spaces: {summary}")
    check(f"grid's runs within 5% of the optimum {100 * summary['within_at']:.0f}% of the time" in ran.stdout,
          f"printed:\n{ran.stdout}")
    timed = {"objective": "time", "optimum": 1.0}
    near = search_protocol.distance_at([[2.0, 1.0], [None, 1.04], [3.0, None]], 2, timed)
    check(abs(near[0] - 0.04) < 1e-12 and near[1] == 2 / 3, f"median 1.04, two of three within 5%: {near}")
    check(search_protocol.distance_at([[None], [None], [1.0]], 1, timed) == (None, 1 / 3),
          "a median run of only failures has no distance")
    check(search_protocol.distance_at([[2.0]], 1, {"objective": "negated_score", "optimum": 1.0}) == (None, None),
          "no ratio of negated scores")
    # --precise: a space whose score's standard error is above it is judged on four times the evaluations.
    # Random search as the strategy: its scores have a standard error on every space (the grid's do not).
    precise_path = os.path.join(tmp, "precise.json")
    strategy = command.index("--strategy") + 1
    precise = subprocess.run(command[:strategy] + ["random"] + command[strategy + 1:-1] +
                             [precise_path, "--precise", "1e-9"], capture_output=True, text=True, timeout=600)
    check(precise.returncode == 0, f"search_protocol --precise: {precise.stderr[-500:]}")
    check(all(r["random_se"] > 1e-9 for r in rows), f"random search's scores have a standard error: {rows}")
    for before, after in zip(rows, json.load(open(precise_path))["spaces"]):
        wanted = max(3, -(-240 // before["budget"]))
        check(wanted > before["repeats"] and after["repeats"] == wanted,
              f"{before['space']}: {wanted} runs with --precise: {before} -> {after}")
        check(after["score"] == after["random"], f"{before['space']}: both columns from the same runs: {after}")
    check("240 where a standard error was above" in precise.stdout, f"the effort printed:\n{precise.stdout}")
    # tpe: Optuna's TPE sampler (bench/search_tpe.py) is run and scored the same way, as the peer of ours.
    has_optuna = subprocess.run(["/usr/bin/python3", "-c", "import optuna"], capture_output=True)
    check(has_optuna.returncode == 0, "optuna is missing; scripts/setup.sh --all installs python3-optuna")
    tpe_path = os.path.join(tmp, "tpe.json")
    tpe = subprocess.run(command[:strategy] + ["tpe"] + command[strategy + 1:-1] + [tpe_path], capture_output=True,
                         text=True, timeout=600)
    check(tpe.returncode == 0, f"search_protocol --strategy tpe: {tpe.stderr[-500:]}")
    tpe_traces = json.load(open(os.path.join(out, next(
        n for n in os.listdir(out) if n.startswith("tiny-tpe-") and n.endswith("-e60.traces.json")))))
    for before, after in zip(rows, json.load(open(tpe_path))["spaces"]):
        check(after["space"] == before["space"] and after["repeats"] == before["repeats"] and
              len(tpe_traces[after["space"]]) == before["repeats"], f"tpe: the grid's runs per space: {after}")
        check(all(len(run) == before["budget"] for run in tpe_traces[after["space"]]), "tpe: runs of the budget")
        check(after["random"] == before["random"], f"tpe: beside the same random search runs: {after}")
    with_options = subprocess.run(command[:strategy] + ["tpe"] + command[strategy + 1:] + ["--options", '{"xi": 1}'],
                                  capture_output=True, text=True, timeout=60)
    one_line(with_options, "--options", "tpe")
    # autotvm: AutoTVM's XGBTuner (bench/search_autotvm.py, below) is run the same way, its options passed on.
    autotvm_path = os.path.join(tmp, "autotvm-protocol.json")
    autotvm = subprocess.run(command[:strategy] + ["autotvm"] + command[strategy + 1:-1] +
                             [autotvm_path, "--options", '{"plan_size": 4}'], capture_output=True, text=True,
                             timeout=600)
    check(autotvm.returncode == 0, f"search_protocol --strategy autotvm: {autotvm.stderr[-500:]}")
    for before, after in zip(rows, json.load(open(autotvm_path))["spaces"]):
        check(after["space"] == before["space"] and after["repeats"] == before["repeats"] and
              after["random"] == before["random"], f"autotvm: the grid's runs per space, beside its random: {after}")
    # --against: the same strategy with other options, measured the same way and compared space by space.
    # The grid in its space-filling order against its index order (the runs above).
    against_path = os.path.join(tmp, "against.json")
    against = subprocess.run(command[:-1] + [against_path, "--options", '{"order": "space_filling"}', "--against",
                                             "{}"], capture_output=True, text=True, timeout=600)
    check(against.returncode == 0, f"search_protocol --against: {against.stderr[-500:]}")
    compared = json.load(open(against_path))
    filling = {r["space"]: r for r in compared["spaces"]}
    for before in rows:
        r = filling[before["space"]]
        check(r["against"] == before["score"] and r["against_se"] == before["se"],
              f"{r['space']}: the index order's own score beside it: {before} / {r}")
        check(abs(r["difference"] - (r["score"] - before["score"])) < 1e-12 and
              abs(r["difference_se"] - math.hypot(r["se"], before["se"])) < 1e-12, f"{r['space']}: the difference: {r}")
    check(any(abs(r["difference"]) > 1e-9 for r in compared["spaces"]), f"the two orders differ: {compared}")
    entry = compared["summary"]["against"]
    mean_difference = sum(r["difference"] for r in compared["spaces"]) / len(rows)
    check(entry["options"] == {} and abs(entry["mean"] - summary["mean"]) < 1e-12 and
          abs(entry["difference"] - mean_difference) < 1e-12, f"the comparison's summary: {entry}")
    margin = {r["space"]: max(2 * r["difference_se"], 1e-9) for r in compared["spaces"]}
    check(entry["lost"] == [r["space"] for r in compared["spaces"] if r["difference"] < -margin[r["space"]]] and
          entry["gained"] == [r["space"] for r in compared["spaces"] if r["difference"] > margin[r["space"]]],
          f"gained and lost beyond two standard errors of the difference: {entry}")
    check(f"against {{}}: mean {summary['mean']:.3f}" in against.stdout and
          f"difference {mean_difference:+.3f}" in against.stdout, f"the comparison printed:\n{against.stdout}")
    same = subprocess.run(command + ["--against", "{}"], capture_output=True, text=True, timeout=60)
    one_line(same, "--against", "same options")
    not_json = subprocess.run(command + ["--against", "{order"], capture_output=True, text=True, timeout=60)
    one_line(not_json, "--against", "not JSON")
    # A second call reuses the traces.
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    check(again.returncode == 0 and "running" not in again.stderr, f"traces reused: {again.stderr}")
    # Bad input: one line each.
    unknown = subprocess.run(command[:3] + ["nosuch"] + command[4:], capture_output=True, text=True, timeout=60)
    check(unknown.returncode != 0, "an unknown split is refused")
    one_line(unknown, "nosuch", "tiny")
    missing = subprocess.run(command[:7] + [os.path.join(tmp, "empty")] + command[8:], capture_output=True,
                             text=True, timeout=60)
    check(missing.returncode != 0, "a split whose spaces are not built is refused")
    one_line(missing, "gather.py")


# A stand-in for a Kernel Tuner checkout: the few names bench/search_kerneltuner.py and a strategy use, and
# a strategy that asks for what the harness must count in Kernel Tuner's way.
STAND_IN = {
    "util.py": """
class StopCriterionReached(Exception):
    pass
class ErrorConfig(str):
    pass
class InvalidConfig(ErrorConfig):
    pass
class RuntimeFailedConfig(ErrorConfig):
    pass
class TuningBudget:
    def __init__(self, time_limit, max_fevals):
        self.num_fevals, self.max_fevals = 0, max_fevals
    def add_evaluations(self, n=1):
        self.num_fevals += n
    def is_done(self):
        return self.num_fevals >= self.max_fevals
""",
    "searchspace.py": """
import constraint  # the harness's stub: importing it works, building a solver does not
class Searchspace:
    def __init__(self, tune_params, restrictions, max_threads, from_cache=None):
        assert tune_params is None and restrictions is None and max_threads is None
        self.tune_params = from_cache["tune_params"]
        self.list = [tuple(c.values()) for c in from_cache["cache"].values()]
""",
    "strategies/__init__.py": "",
    "strategies/probe.py": """
import random
from kernel_tuner.util import StopCriterionReached
def tune(searchspace, runner, options):
    def cost(config):
        result = runner.run([config], options)[0]
        if result is None:
            raise StopCriterionReached()
        return result.get("time", float("inf"))
    first = sorted(searchspace.list)
    try:
        cost(first[0]); cost(first[0])          # a configuration evaluated again costs nothing
        cost((-1,) * len(first[0]))             # nor does one outside the records
        for config in random.sample(first, len(first)):
            cost(config)
    except StopCriterionReached:
        pass
""",
}


def kernel_tuner_peer(tmp):
    """bench/search_kerneltuner.py counts a configuration's first evaluation only, a failure as one, and one
    outside the records as none, as Kernel Tuner's simulation mode does; its traces are the first evaluations."""
    checkout = os.path.join(tmp, "checkout")
    for name, text in STAND_IN.items():
        os.makedirs(os.path.dirname(os.path.join(checkout, "kernel_tuner", name)), exist_ok=True)
        with open(os.path.join(checkout, "kernel_tuner", name), "w") as f:
            f.write(text)
    cache = {f"{b},{u}": {"block": b, "unroll": u, "time": "RuntimeFailedConfig" if b == 32 and u == 2 else
                          1.0 + b / 100 + u} for b in (32, 64) for u in (0, 1, 2)}
    space = os.path.join(tmp, "peer", "space.json")
    os.makedirs(os.path.dirname(space))
    with open(space, "w") as f:
        json.dump({"tune_params_keys": ["block", "unroll"], "tune_params": {"block": [32, 64], "unroll": [0, 1, 2]},
                   "objective": "time", "cache": cache}, f)
    out = os.path.join(tmp, "peer.json")
    command = ["/usr/bin/python3", os.path.join(SOURCE, "bench", "search_kerneltuner.py"), space, "--kernel-tuner",
               checkout, "--strategy", "probe", "--budget", "4", "--repeats", "3", "--json", out]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=120)
    check(ran.returncode == 0, f"search_kerneltuner: {ran.stderr[-800:]}")
    runs = json.load(open(out))["peer/space"]
    values = {1.0 + b / 100 + u for b in (32, 64) for u in (0, 1, 2) if (b, u) != (32, 2)}
    check(len(runs) == 3, f"one run per repeat: {runs}")
    for run in runs:
        check(len(run) == 4 and run[0] == 1.32, f"four first evaluations, the repeated one once: {run}")
        check(len(set(map(str, run))) == 4 and all(v is None or v in values for v in run),
              f"each a recorded value, a failure as null: {run}")
    check(len({json.dumps(run) for run in runs}) > 1, f"seeded per repeat, so the runs differ: {runs}")
    everything = subprocess.run(command[:-6] + ["--budget", "100", "--repeats", "1", "--json", out],
                                capture_output=True, text=True, timeout=120)
    check(everything.returncode == 0, f"search_kerneltuner: {everything.stderr[-800:]}")
    run = json.load(open(out))["peer/space"][0]
    check(len(run) == 6 and run.count(None) == 1, f"a budget above the space ends at its size: {run}")
    unknown = subprocess.run(command[:6] + ["nosuch"] + command[7:], capture_output=True, text=True, timeout=60)
    one_line(unknown, "nosuch")


def autotvm_peer(tmp):
    """bench/search_autotvm.py, AutoTVM's XGBTuner: a run measures each configuration once, a failure as null;
    until the first plan it samples uniformly, and after every `plan_size` measurements it measures the plan
    the fitted cost model and its annealing make, which on a smooth space beats the random ones before it."""
    has_xgboost = subprocess.run(["/usr/bin/python3", "-c", "import xgboost"], capture_output=True)
    check(has_xgboost.returncode == 0, "xgboost is missing; scripts/setup.sh --all installs python3-xgboost")
    # Every time is distinct, so a trace names its configurations; the slowest corner fails.
    def time(x, y):
        return 1.0 + 20 * abs(x - 13) + abs(y - 6) + 0.001 * (20 * x + y)
    failed = {(x, y) for x in range(20) for y in range(20) if x + y >= 36}
    cache = {f"{x},{y}": {"x": x, "y": y, "time": "RuntimeFailedConfig" if (x, y) in failed else time(x, y)}
             for x in range(20) for y in range(20)}
    space = os.path.join(tmp, "autotvm", "space.json")
    os.makedirs(os.path.dirname(space))
    with open(space, "w") as f:
        json.dump({"tune_params_keys": ["x", "y"], "tune_params": {"x": list(range(20)), "y": list(range(20))},
                   "objective": "time", "cache": cache}, f)
    out = os.path.join(tmp, "autotvm.json")
    command = ["/usr/bin/python3", os.path.join(SOURCE, "bench", "search_autotvm.py"), space, "--budget", "24",
               "--repeats", "6", "--json", out, "--options", '{"plan_size": 8}']
    ran = subprocess.run(command, capture_output=True, text=True, timeout=300)
    check(ran.returncode == 0, f"search_autotvm: {ran.stderr[-800:]}")
    runs = json.load(open(out))["autotvm/space"]
    values = {time(x, y) for x in range(20) for y in range(20) if (x, y) not in failed}
    check(len(runs) == 6 and len({json.dumps(run) for run in runs}) == 6, f"one run per seed, each its own: {runs}")
    for run in runs:
        measured = [v for v in run if v is not None]
        check(len(run) == 24 and len(set(measured)) == len(measured) and all(v in values for v in measured),
              f"24 evaluations of recorded values, none twice: {run}")
    # The first plan (evaluations 9 to 16) against the uniform draws before it, over the runs.
    worst = max(values)
    def median(part):
        return statistics.median(worst if v is None else v for run in runs for v in part(run))
    random_part, planned = median(lambda run: run[:8]), median(lambda run: run[8:16])
    check(planned < random_part / 2, f"the plan beats the random draws: {planned} against {random_part}")
    # Before the first plan of the default 64, every evaluation is a uniform draw, failures included (6 of the
    # 400 configurations: none in 800 draws has a chance of e^-12).
    uniform = subprocess.run(command[:4] + ["20", "--repeats", "40", "--json", out], capture_output=True, text=True,
                             timeout=300)
    check(uniform.returncode == 0, f"search_autotvm: {uniform.stderr[-800:]}")
    check(sum(run.count(None) for run in json.load(open(out))["autotvm/space"]) > 0, "failures are measured")
    for options, needle in (('{"plan": 8}', "plan"), ('{"loss_type": "hinge"}', "loss_type"), ("[", "JSON")):
        refused = subprocess.run(command[:-1] + [options], capture_output=True, text=True, timeout=60)
        one_line(refused, "--options", needle)


def main():
    with tempdir() as tmp:
        splits_path, tiny = tiny_split(tmp)
        data = gather(tmp, splits_path, tiny)
        conversions(tmp)
        protocol(tmp, splits_path, data)
        kernel_tuner_peer(tmp)
        autotvm_peer(tmp)
    print("ok")


if __name__ == "__main__":
    main()
