#!/usr/bin/env python3
"""Scores a search strategy on one split of the recorded tuning spaces (bench/spaces/splits.json).

    bench/search_protocol.py --split test [--data DIR] [--strategy bayes] [--options JSON] [--repeats 10]
                             [--evaluations 3000] [--random [--at 20]] [--precise SE] [--against JSON]
                             [--out DIR] [--splits FILE]

The splits: `development` (defaults and changes are chosen on it), `validation` (candidate changes are
checked on it before they are kept) and `test` (scored once per change of the defaults; nothing is
chosen on it). DIR (default build/spaces) holds the spaces as bench/spaces/gather.py writes them,
DIR/<name>.json; a space of the split that is missing is an error naming the command that builds it.

Each space is run for its budget B(0.95) capped at 300 through `autotune search-bench --budget auto`,
REPEATS times (seeds 1..REPEATS), then again (the next seeds) until it has max(REPEATS, ceil(EVALUATIONS /
B)) runs: every space is judged on about as many evaluations (10 runs of 300 by default), so a space of
a budget of 4 is not judged on 10 runs of its first evaluations, which are coin flips. Then it is
scored (../shared/data/tuning/README.md: 0 is random search's expected best, 1 the optimum at every
budget). Printed: per space its score and the score's bootstrap
standard error over the repeats; then the mean over the split's spaces, the worst space, and the
number of spaces below random search by more than two standard errors (score < -2 se: random search
scores 0 in expectation by the score's definition). With --random, random search is run and scored
the same way beside it, and a space also counts as below it when the difference of the two scores is
below minus two standard errors of the difference; a space where random search's own score has a
standard error above 1 is marked unscorable, and the mean is also given without those. The score
averages a space's whole window; a user with a fixed budget sees one point of it, so with --random the
median runs' best after AT evaluations (a space's budget where smaller) are compared too, and a space
is named where the strategy's is worse than random search's in at least 97.5% of bootstrap resamplings.
On spaces timed in ms it also says how far from the optimum that leaves a user: per space, the median
run's best after AT over the optimum (strategy and random search); over the spaces, the share of runs
within 5% of the optimum and the median of the median runs' distances.

Some spaces need more runs than others: where the runs split near the median run, a score's bootstrap
standard error stays large however many evaluations the other spaces need. With --precise SE, a space
whose strategy's score (or, with --random, random search's, unless the space is unscorable) has a
standard error above SE is run again with four times EVALUATIONS, and those runs are what it is
judged on; its repeats column shows how many.

A change is chosen by comparing it with what it would replace: --against JSON runs the same strategy
with those options too (`{}`: its defaults), measured the same way (--precise included), and prints per
space the other options' score and the difference, marking a space where the difference is beyond two
standard errors of the difference; then the mean difference with its standard error and how many spaces
gained or lost beyond two. The strategy's runs diverge after their first different proposal, so the two
are treated as independent.

Traces and scores are kept in OUT (default build/search-protocol), named by split, strategy, options,
repeats and a digest of what made the traces (the autotune binary, or a peer's script), so a second call
with the same build only prints, and a rebuilt autotune measures its strategies again. --json FILE writes the summary and the per-space scores.
"""
import argparse
import hashlib
import json
import math
import os
import random as random_module
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def fail(message):
    sys.exit(f"search_protocol: {message}")


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip()}")


def mean_standard_error(errors):
    """The standard error of a mean over spaces whose scores are independent, from theirs."""
    return math.sqrt(sum(e ** 2 for e in errors)) / len(errors)


def strategy_command(args, strategy, options, files, repeats, seed, out):
    """The command that runs `strategy` on `files` for their budgets (B(0.95) capped at 300), `repeats` runs
    each from `seed`, writing the traces to `out`. `tpe` is Optuna's TPE sampler (bench/search_tpe.py, Debian's
    python3-optuna), the peer a strategy of ours is measured against; `kt:NAME` is Kernel Tuner's strategy NAME
    (bench/search_kerneltuner.py, from the checkout --kernel-tuner); `autotvm` is AutoTVM's XGBTuner
    (bench/search_autotvm.py, Debian's python3-xgboost); the others are autotune's."""
    def peer(script, *arguments):
        return ["/usr/bin/python3", os.path.join(HERE, script), *files, *arguments, "--budget", "auto", "--repeats",
                str(repeats), "--seed", str(seed), "--json", out]
    if strategy == "tpe":
        return peer("search_tpe.py")
    if strategy == "autotvm":
        return peer("search_autotvm.py", "--options", json.dumps(options))
    if strategy.startswith("kt:"):
        return peer("search_kerneltuner.py", "--kernel-tuner", args.kernel_tuner, "--strategy", strategy[3:],
                    "--options", json.dumps(options))
    return [args.autotune, "search-bench", *files, "--strategy", strategy, "--budget", "auto", "--repeats",
            str(repeats), "--seed", str(seed), "--options", json.dumps(options), "--json", out]


def maker_of(args, strategy):
    """A digest of what makes `strategy`'s traces: the autotune binary for autotune's strategies, the peer's
    script (and Kernel Tuner's checkout) for the others. Traces are deterministic for one maker, so OUT keeps
    them under it: a rebuilt autotune runs its strategies again instead of scoring a former build's traces."""
    peers = {"tpe": "search_tpe.py", "autotvm": "search_autotvm.py"}
    script = "search_kerneltuner.py" if strategy.startswith("kt:") else peers.get(strategy)
    path = os.path.join(HERE, script) if script else args.autotune
    digest = hashlib.sha1(str(args.kernel_tuner if strategy.startswith("kt:") else "").encode())
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def scores_of(args, files, traces, scores):
    """search-bench's scores of `traces` on `files`: read from `scores` when that is as new as the traces and
    gives every space's objective and optimum (older files do not), else written there again first."""
    if os.path.exists(scores) and os.path.getmtime(scores) >= os.path.getmtime(traces):
        with open(scores) as f:
            kept = json.load(f)
        if all("objective" in entry for entry in kept.values()):
            return kept
    run([args.autotune, "search-bench", *files, "--score", traces, "--json", scores])
    with open(scores) as f:
        return json.load(f)


def scored(args, names, files, strategy, options, measured_runs=None):
    """({space: score entry}, the traces file) for `strategy` with `options` on `files` (the spaces `names`),
    from OUT when already there. The traces file holds {space: runs}, a run the list of its evaluations'
    values (None: failed). `measured_runs` ({space: runs} of seeds 1 on, as a call with fewer evaluations
    left them) stand in for those seeds' runs instead of being run again."""
    tag = hashlib.sha1(json.dumps([sorted(files), options, maker_of(args, strategy)],
                                  sort_keys=True).encode()).hexdigest()[:10]
    stem = os.path.join(args.out, f"{args.split}-{strategy}-{tag}-r{args.repeats}")
    traces, scores = stem + ".traces.json", stem + ".scores.json"
    if not os.path.exists(traces) and measured_runs is not None:
        with open(traces + ".part", "w") as f:
            json.dump({name: measured_runs[name] for name in names}, f)
        os.replace(traces + ".part", traces)
    if not os.path.exists(traces):
        print(f"running {strategy} {json.dumps(options)} on {len(files)} spaces, {args.repeats} repeats",
              file=sys.stderr)
        run(strategy_command(args, strategy, options, files, args.repeats, 1, traces + ".part"))
        os.replace(traces + ".part", traces)
    first = scores_of(args, files, traces, scores)
    if not args.evaluations:
        return first, traces
    # Equal evaluations per space: a space of budget B gets ceil(E / B) repeats (at least REPEATS), so a
    # space of a few evaluations is judged on as many evaluations as one of 300, not on 10 coin flips.
    wanted = {name: max(args.repeats, math.ceil(args.evaluations / entry["high_budget"]))
              for name, entry in first.items()}
    equal = f"{stem}-e{args.evaluations}"
    equal_traces, equal_scores = equal + ".traces.json", equal + ".scores.json"
    if not os.path.exists(equal_traces):
        with open(traces) as f:
            merged = json.load(f)
        for name in names:
            if measured_runs is not None and len(measured_runs[name]) > len(merged[name]):
                merged[name] = measured_runs[name]
        for name, path in zip(names, files):
            extra = wanted[name] - len(merged[name])
            if extra <= 0:
                continue
            print(f"  {name}: {extra} more repeats of {strategy}", file=sys.stderr)
            part = equal + ".part.json"
            run(strategy_command(args, strategy, options, [path], extra, len(merged[name]) + 1, part))
            with open(part) as f:
                merged[name] += json.load(f)[name]
            os.remove(part)
        with open(equal_traces + ".part", "w") as f:
            json.dump(merged, f)
        os.replace(equal_traces + ".part", equal_traces)
    out = scores_of(args, files, equal_traces, equal_scores)
    for name, entry in out.items():
        entry["repeats"] = wanted[name]
    return out, equal_traces


def measured(args, names, files, options, earlier=(None, None)):
    """The strategy's scores, random search's (None without --random), and the runs of both (random
    search's None without --random), each {space: ...}. `earlier`: the strategy's and random search's
    runs from a call with fewer evaluations, reused (scored's `measured_runs`)."""
    main_scores, main_traces = scored(args, names, files, args.strategy, options, earlier[0])
    with open(main_traces) as f:
        main_runs = json.load(f)
    if not args.random:
        return main_scores, None, main_runs, None
    random_scores, random_traces = scored(args, names, files, "random", {}, earlier[1])
    with open(random_traces) as f:
        random_runs = json.load(f)
    return main_scores, random_scores, main_runs, random_runs


def measured_precisely(args, names, files, options):
    """measured(), with the spaces whose standard error is above --precise measured again with four times
    the evaluations, and judged on those runs."""
    main_scores, random_scores, main_runs, random_runs = measured(args, names, files, options)
    if args.precise > 0:
        noisy = [name for name in names if main_scores[name]["bootstrap_se"] > args.precise or (
            random_scores is not None and args.precise < random_scores[name]["bootstrap_se"] <= 1)]
        if noisy:
            again = argparse.Namespace(**vars(args))
            again.evaluations = 4 * args.evaluations
            more = measured(again, noisy, [files[names.index(name)] for name in noisy], options,
                            (main_runs, random_runs))
            for whole, part in zip((main_scores, random_scores, main_runs, random_runs), more):
                if whole is not None:
                    whole.update(part)
    return main_scores, random_scores, main_runs, random_runs


def beyond(row):
    """1 where a space gained on the --against options by more than two standard errors of the difference, -1
    where it lost by as much, else 0. Deterministic runs have no standard error: any difference above rounding
    counts."""
    margin = max(2 * row["difference_se"], 1e-9)
    return 1 if row["difference"] > margin else -1 if row["difference"] < -margin else 0


def listed(spaces):
    return f"{len(spaces)} ({', '.join(spaces)})" if spaces else "0"


def compared(summary, rows, against):
    """Prints (and adds to `summary`) the comparison with the --against options, over every space and, when
    some are unscorable, over the scorable ones."""
    groups = [("", rows)]
    scorable = [r for r in rows if not r.get("unscorable")]
    if len(scorable) < len(rows):
        groups.append(("scorable_", scorable))
    entry = {"options": against}
    for prefix, group in groups:
        if not group:
            continue
        difference = statistics.mean(r["difference"] for r in group)
        difference_se = mean_standard_error([r["difference_se"] for r in group])
        gained = [r["space"] for r in group if beyond(r) > 0]
        lost = [r["space"] for r in group if beyond(r) < 0]
        entry.update({prefix + "mean": statistics.mean(r["against"] for r in group),
                      prefix + "mean_se": mean_standard_error([r["against_se"] for r in group]),
                      prefix + "difference": difference, prefix + "difference_se": difference_se,
                      prefix + "gained": gained, prefix + "lost": lost})
        over = f" over the {len(group)} scorable spaces" if prefix else ""
        print(f"against {json.dumps(against)}{over}: mean {entry[prefix + 'mean']:.3f} "
              f"(se {entry[prefix + 'mean_se']:.3f}); difference {difference:+.3f} (se {difference_se:.3f}"
              + (f", {abs(difference) / difference_se:.1f} standard errors" if difference_se > 0 else "") +
              "); beyond two standard errors of the difference "
              f"gained on {listed(gained)}, lost on {listed(lost)}")
    summary["against"] = entry


def shown(best):
    return "only failures" if best is None else f"{best:.4g}"


def best_after(runs, m):
    """Each run's best value within its first m evaluations (infinity when all of them failed)."""
    return [min((v for v in run[:m] if v is not None), default=math.inf) for run in runs]


WITHIN = 0.05  # "close to the optimum", for distance_at


def distance_at(runs, m, entry):
    """How far from the optimum a user who stops after m evaluations is, on a space timed in ms (`entry`
    its scores from search-bench): (the median run's best over the optimum, minus 1, None where that run
    had only failures; the share of runs whose best is within 5% of the optimum). (None, None) on a space
    of another objective: a ratio of negated scores means nothing."""
    if entry["objective"] != "time":
        return None, None
    optimum = entry["optimum"]
    bests = best_after(runs, m)
    median = statistics.median(bests)
    return (None if math.isinf(median) else median / optimum - 1,
            sum(best <= optimum * (1 + WITHIN) for best in bests) / len(bests))


def percent(fraction):
    return "-" if fraction is None else f"{100 * fraction:+.1f}%"


def chance_worse(runs, random_runs, m, resamples=400):
    """The bootstrap probability that the median run's best after m evaluations is worse (higher) than
    random search's: the share of resamplings of both sets of runs in which it is. Seeded: the same
    traces give the same answer."""
    rng = random_module.Random(0)
    ours, theirs = best_after(runs, m), best_after(random_runs, m)
    worse = 0
    for _ in range(resamples):
        worse += statistics.median(rng.choices(ours, k=len(ours))) > \
            statistics.median(rng.choices(theirs, k=len(theirs)))
    return worse / resamples


def options_argument(flag, text, example):
    """A strategy's options given as JSON on the command line; anything but an object is refused."""
    try:
        options = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{flag}: not JSON ({e})")
    if not isinstance(options, dict):
        fail(f"{flag}: expected a JSON object, e.g. {example}")
    return options


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", required=True)
    parser.add_argument("--splits", default=os.path.join(HERE, "spaces", "splits.json"))
    parser.add_argument("--data", default=os.path.join(ROOT, "build", "spaces"))
    parser.add_argument("--strategy", default="bayes",
                        help="an autotune strategy; tpe (Optuna's TPE sampler, needs scripts/setup.sh --optuna); or "
                             "kt:NAME (Kernel Tuner's strategy NAME, needs --kernel-tuner and scripts/setup.sh "
                             "--kernel-tuner); or autotvm (AutoTVM's XGBTuner, needs scripts/setup.sh --autotvm)")
    parser.add_argument("--kernel-tuner", help="a Kernel Tuner checkout, for --strategy kt:NAME")
    parser.add_argument("--options", default="{}", help="the strategy's options as JSON")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--evaluations", type=int, default=3000,
                        help="evaluations per space: a space of budget B gets max(REPEATS, ceil(E / B)) repeats "
                             "(0: REPEATS on every space)")
    parser.add_argument("--random", action="store_true", help="also run random search and compare")
    parser.add_argument("--at", type=int, default=20,
                        help="with --random, also compare the median runs' best after this many evaluations")
    parser.add_argument("--precise", type=float, default=0,
                        help="run a space whose score's standard error is above this again with four times the "
                             "evaluations (0: off)")
    parser.add_argument("--against", help="also run the strategy with these options (JSON; {} for its defaults) "
                                          "and compare space by space")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "search-protocol"))
    parser.add_argument("--json", help="write the summary and per-space scores here")
    parser.add_argument("--autotune", default=os.environ.get("AUTOTUNE_BIN", os.path.join(ROOT, "build", "autotune")))
    args = parser.parse_args()
    if args.repeats < 2:
        fail("--repeats must be at least 2 (the standard error needs two)")
    if args.at < 1:
        fail("--at must be at least 1 (evaluations)")
    if args.precise < 0 or (args.precise > 0 and not args.evaluations):
        fail("--precise must be at least 0, and needs --evaluations above 0 (it multiplies them)")
    options = options_argument("--options", args.options, '{"initial": 6}')
    against = None
    if args.against is not None:
        against = options_argument("--against", args.against, "{} for the defaults")
        if against == options:
            fail("--against: the same options as --options; nothing to compare")
        if args.strategy == "tpe" and against:
            fail("--against: tpe takes no options (Optuna's TPESampler with its defaults)")
    if not os.access(args.autotune, os.X_OK):
        fail(f"--autotune {args.autotune}: not an executable; build it with cmake --build build, or name one")
    if args.strategy.startswith("kt:") and not args.kernel_tuner:
        fail(f"--strategy {args.strategy}: needs --kernel-tuner PATH (a Kernel Tuner checkout)")
    if args.strategy == "tpe" and options:
        fail("--options: tpe takes none (Optuna's TPESampler with its defaults)")
    try:
        with open(args.splits) as f:
            splits = json.load(f)["splits"]
    except (OSError, json.JSONDecodeError, KeyError) as e:
        fail(f"{args.splits}: cannot read the splits ({e})")
    if args.split not in splits:
        fail(f"--split {args.split}: unknown (accepted: {', '.join(splits)})")
    names = [space["name"] for space in splits[args.split]]
    files = [os.path.join(args.data, name + ".json") for name in names]
    missing = [name for name, path in zip(names, files) if not os.path.exists(path)]
    if missing:
        fail(f"{len(missing)} spaces of split {args.split} are not in {args.data} ({', '.join(missing[:3])}"
             f"{', ...' if len(missing) > 3 else ''}); build them with: python3 bench/spaces/gather.py {args.data}")
    os.makedirs(args.out, exist_ok=True)

    # search-bench names a space "<parent-dir>/<file-stem>", which is the split's name here.
    main_scores, random_scores, main_runs, random_runs = measured_precisely(args, names, files, options)
    against_scores = None if against is None else measured_precisely(args, names, files, against)[0]

    rows = []
    for name in names:
        entry = main_scores[name]
        row = {"space": name, "score": entry["score"], "se": entry["bootstrap_se"],
               "budget": entry["high_budget"], "repeats": entry.get("repeats", args.repeats)}
        row["below_random"] = row["score"] < -2 * row["se"]
        if against_scores is not None:
            a = against_scores[name]
            row["against"], row["against_se"] = a["score"], a["bootstrap_se"]
            row["difference"] = row["score"] - a["score"]
            row["difference_se"] = math.hypot(row["se"], a["bootstrap_se"])
        if random_scores is not None:
            r = random_scores[name]
            row["random"] = r["score"]
            row["random_se"] = r["bootstrap_se"]
            difference_se = math.hypot(row["se"], r["bootstrap_se"])
            row["below_measured_random"] = row["score"] - r["score"] < -2 * difference_se
            # Random search is the score's zero. Where its own score is uncertain by more than the score's
            # unit (random search to the optimum), the space cannot rank strategies: a budget of one or two
            # evaluations on a space whose values fall in two clusters, the median run's best in one or the
            # other by a coin flip.
            row["unscorable"] = r["bootstrap_se"] > 1
            # The score averages over the space's whole window; a user with a fixed, small budget sees one
            # point of it. A strategy whose median run is behind random search's there, at 97.5%
            # confidence, is below random at that budget, whatever its score.
            at = min(args.at, row["budget"])
            row["at"] = at
            # None: the median run had only failures by then (JSON has no infinity).
            row["best_at"], row["random_best_at"] = (
                None if math.isinf(best) else best
                for best in (statistics.median(best_after(runs[name], at)) for runs in (main_runs, random_runs)))
            row["below_random_at"] = chance_worse(main_runs[name], random_runs[name], at) >= 0.975
            for prefix, runs in (("", main_runs), ("random_", random_runs)):
                row[prefix + "slower_at"], row[prefix + "within_at"] = distance_at(runs[name], at, entry)
        rows.append(row)

    header = f"{'space':<38}{'budget':>7}{'repeats':>8}{args.strategy:>10}{'se':>8}"
    if random_scores is not None:
        header += f"{'random':>9}{'se':>8}{'slower@' + str(args.at):>11}{'random':>9}"
    if against_scores is not None:
        header += f"{'against':>9}{'se':>8}{'diff':>8}"
    print(header)
    for row in rows:
        line = f"{row['space']:<38}{row['budget']:>7}{row['repeats']:>8}{row['score']:>10.3f}{row['se']:>8.3f}"
        if random_scores is not None:
            line += f"{row['random']:>9.3f}{row['random_se']:>8.3f}"
            line += f"{percent(row['slower_at']):>11}{percent(row['random_slower_at']):>9}"
        if against_scores is not None:
            line += f"{row['against']:>9.3f}{row['against_se']:>8.3f}{row['difference']:>+8.3f}"
            if beyond(row):
                line += "  gained" if beyond(row) > 0 else "  lost"
        if row["below_random"] or row.get("below_measured_random"):
            line += "  below random"
        if row.get("below_random_at"):
            line += f"  below random after {row['at']}"
        if row.get("unscorable"):
            line += "  unscorable"
        print(line)
    worst = min(rows, key=lambda r: r["score"])
    summary = {
        "split": args.split,
        "strategy": args.strategy,
        "options": options,
        "repeats": args.repeats,
        "spaces": len(rows),
        "evaluations": args.evaluations,
        "precise": args.precise,
        "mean": statistics.mean(r["score"] for r in rows),
        "mean_se": mean_standard_error([r["se"] for r in rows]),
        "worst": {"space": worst["space"], "score": worst["score"]},
        "below_random": sum(r["below_random"] for r in rows),
    }
    effort = f"{args.evaluations} evaluations per space (at least {args.repeats} repeats)" if args.evaluations \
        else f"{args.repeats} repeats"
    if args.precise > 0:
        effort += f"; {4 * args.evaluations} where a standard error was above {args.precise:g}"
    print(f"\n{args.split}: {len(rows)} spaces, {args.strategy} {json.dumps(options)}, {effort}")
    print(f"mean score {summary['mean']:.3f} (se {summary['mean_se']:.3f}); worst {worst['space']} {worst['score']:.3f}; "
          f"{summary['below_random']} below random search by more than two standard errors")
    if random_scores is not None:
        summary["random_mean"] = statistics.mean(r["random"] for r in rows)
        summary["random_mean_se"] = mean_standard_error([r["random_se"] for r in rows])
        summary["below_measured_random"] = sum(r["below_measured_random"] for r in rows)
        print(f"random search (measured): mean {summary['random_mean']:.3f}; {args.strategy} below it by more "
              f"than two standard errors of the difference on {summary['below_measured_random']}")
        behind = [r for r in rows if r["below_random_at"]]
        summary["at"] = args.at
        summary["below_random_at"] = [r["space"] for r in behind]
        print(f"after {args.at} evaluations (a space's budget where smaller): {args.strategy}'s median run behind "
              f"random search's (97.5% bootstrap) on {len(behind)}"
              + "".join(f"; {r['space']} {shown(r['best_at'])} against {shown(r['random_best_at'])}" for r in behind))
        # What a user who stops there gets, where the values are times.
        timed = [r for r in rows if r["within_at"] is not None]
        if timed:
            def middle(key):  # None (JSON has no infinity) where most median runs had only failures
                median = statistics.median(math.inf if r[key] is None else r[key] for r in timed)
                return None if math.isinf(median) else median
            summary["timed_at"] = len(timed)
            for prefix in ("", "random_"):
                summary[prefix + "within_at"] = statistics.mean(r[prefix + "within_at"] for r in timed)
                summary[prefix + "slower_at"] = middle(prefix + "slower_at")
            print(f"  on the {len(timed)} spaces timed in ms: {args.strategy}'s runs within "
                  f"{100 * WITHIN:.0f}% of the optimum {100 * summary['within_at']:.0f}% of the time (random "
                  f"search's {100 * summary['random_within_at']:.0f}%); the median run's best "
                  f"{percent(summary['slower_at'])} from the optimum, median over the spaces (random search's "
                  f"{percent(summary['random_slower_at'])})")
        scorable = [r for r in rows if not r["unscorable"]]
        summary["unscorable"] = [r["space"] for r in rows if r["unscorable"]]
        if scorable and summary["unscorable"]:
            summary["scorable_mean"] = statistics.mean(r["score"] for r in scorable)
            summary["scorable_mean_se"] = mean_standard_error([r["se"] for r in scorable])
            summary["scorable_random_mean"] = statistics.mean(r["random"] for r in scorable)
            print(f"without the {len(summary['unscorable'])} unscorable (random search's own standard error above 1): "
                  f"mean score {summary['scorable_mean']:.3f} (se {summary['scorable_mean_se']:.3f}) over "
                  f"{len(scorable)} spaces, random search {summary['scorable_random_mean']:.3f}")
    if against_scores is not None:
        compared(summary, rows, against)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "spaces": rows}, f, indent=1)


if __name__ == "__main__":
    main()
