#!/usr/bin/env python3
"""Leave-one-space-out scores of the search strategies: how they do on a space nobody tuned them on.

    bench/search_loo.py [--data DIR] [--candidates FILE] [--repeats 10] [--out DIR] [--tpe]

Every Kernel Tuner cachefile under DIR (default ../shared/data/tuning) is a space. Each strategy comes
with candidate option sets (FILE, default bench/search_candidates.json: {"bayes": [{}, {"xi": 0.1}, ...]});
each candidate runs on every space for its B(0.95) budget capped at 300, REPEATS times (seeds
1..REPEATS), through `autotune search-bench`. The traces and their scores are kept in OUT (default
build/search-loo), so a second call only scores.

For every space in turn, the candidate with the best mean score on the *other* spaces is chosen and
scored on the held-out one: that is the strategy's leave-one-out score on it, which no choice made on
that space can inflate. The in-sample column chooses one candidate on all spaces, as a developer tuning
defaults on the spaces they have would. The spread is the standard deviation, over repeats, of the
held-out mean (each repeat scored on its own). Random search scores 0 in expectation by the score's
definition; a held-out score is clearly above it when it exceeds two standard errors (bootstrap over the
repeats) of the score.

With --tpe, Optuna's TPE (Debian's python3-optuna, bench/search_tpe.py) is scored on the same spaces
(it has no candidates: its defaults are not ours to choose).
"""
import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def cachefiles(folder):
    found = []
    for parent, _, names in os.walk(folder):
        for name in sorted(names):
            if not name.endswith(".json"):
                continue
            path = os.path.join(parent, name)
            try:
                with open(path, errors="replace") as f:
                    is_cachefile = '"tune_params_keys"' in f.read()
            except OSError:
                continue
            if is_cachefile:
                found.append(path)
    if not found:
        sys.exit(f"search_loo: no Kernel Tuner cachefile under {folder}")
    return sorted(found)


def candidate_id(options):
    text = json.dumps(options, sort_keys=True)
    return "default" if options == {} else hashlib.sha1(text.encode()).hexdigest()[:10]


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"search_loo: {' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip()}")


def scores_of(args, files, name, make_traces):
    """Per space: {"score": s, "per_repeat": [...]} for the traces `make_traces(path)` writes."""
    traces = os.path.join(args.out, f"{name}.traces.json")
    scores = os.path.join(args.out, f"{name}.scores.json")
    if not os.path.exists(traces):
        make_traces(traces)
    if not os.path.exists(scores) or os.path.getmtime(scores) < os.path.getmtime(traces):
        run([args.autotune, "search-bench", *files, "--score", traces, "--json", scores])
    with open(scores) as f:
        return json.load(f)


def best_candidate(candidates, spaces):
    """The candidate with the best mean score on `spaces`; ties go to the defaults, then to the first."""
    return max(candidates, key=lambda c: (statistics.mean(candidates[c][s]["score"] for s in spaces), c == "default"))


def leave_one_out(candidates, spaces):
    """candidates: {id: {space: score entry}}. Returns the held-out entry chosen for each space."""
    chosen = {}
    for held_out in spaces:
        best = best_candidate(candidates, [s for s in spaces if s != held_out])
        chosen[held_out] = (best, candidates[best][held_out])
    return chosen


def spread(entries):
    """Standard deviation over repeats of the mean over spaces, each repeat scored on its own."""
    repeats = min(len(e["per_repeat"]) for e in entries)
    means = [statistics.mean(e["per_repeat"][r] for e in entries) for r in range(repeats)]
    return statistics.stdev(means) if len(means) > 1 else 0.0


def standard_error(entry):
    """Of a space's score over repeats: the bootstrap one search-bench computes (the score takes a median
    over repeats, so the spread of repeats scored one by one, heavy-tailed at small budgets, overstates
    its noise); from the repeats scored one by one for older score files."""
    if "bootstrap_se" in entry:
        return entry["bootstrap_se"]
    values = entry["per_repeat"]
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("inf")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "tuning"))
    parser.add_argument("--candidates", default=os.path.join(HERE, "search_candidates.json"))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "search-loo"))
    parser.add_argument("--autotune", default=os.environ.get("AUTOTUNE_BIN", os.path.join(ROOT, "build", "autotune")))
    parser.add_argument("--tpe", action="store_true", help="also score Optuna's TPE (needs python3-optuna)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="TPE's runs in parallel")
    args = parser.parse_args()
    if args.repeats < 2:
        sys.exit("search_loo: --repeats must be at least 2 (the spread needs two)")
    files = cachefiles(args.data)
    with open(args.candidates) as f:
        strategies = json.load(f)
    if not isinstance(strategies, dict) or not all(isinstance(v, list) and v for v in strategies.values()):
        sys.exit(f'search_loo: {args.candidates}: expected {{"strategy": [{{options}}, ...], ...}}')
    os.makedirs(args.out, exist_ok=True)
    print(f"{len(files)} spaces under {args.data}, {args.repeats} repeats", file=sys.stderr)

    rows = {}
    per_space = {}
    held_entries = {}
    chosen_options = {}
    for strategy, option_sets in strategies.items():
        candidates = {}
        for options in option_sets:
            cid = candidate_id(options)
            name = f"{strategy}-{cid}-r{args.repeats}"

            def make(path, strategy=strategy, options=options):
                print(f"running {strategy} {json.dumps(options)}", file=sys.stderr)
                run([args.autotune, "search-bench", *files, "--strategy", strategy, "--budget", "auto",
                     "--repeats", str(args.repeats), "--options", json.dumps(options), "--json", path])

            candidates[cid] = scores_of(args, files, name, make)
        spaces = sorted(next(iter(candidates.values())))
        in_sample_id = best_candidate(candidates, spaces)
        held = leave_one_out(candidates, spaces)
        entries = [entry for _, entry in held.values()]
        rows[strategy] = {
            "candidates": len(candidates),
            "in_sample": statistics.mean(candidates[in_sample_id][s]["score"] for s in spaces),
            "loo": statistics.mean(e["score"] for e in entries),
            "worst": min((e["score"], s) for s, (_, e) in held.items()),
            "spread": spread(entries),
        }
        per_space[strategy] = {s: e["score"] for s, (_, e) in held.items()}
        held_entries[strategy] = {s: e for s, (_, e) in held.items()}
        options_of = {candidate_id(o): json.dumps(o, sort_keys=True) for o in option_sets}
        chosen_options[strategy] = {s: options_of[c] for s, (c, _) in held.items()}

    if args.tpe:
        def make_tpe(path):
            print("running tpe", file=sys.stderr)
            run(["/usr/bin/python3", os.path.join(HERE, "search_tpe.py"), *files, "--budget", "auto",
                 "--repeats", str(args.repeats), "--jobs", str(args.jobs), "--json", path])

        tpe = scores_of(args, files, f"tpe-r{args.repeats}", make_tpe)
        entries = list(tpe.values())
        mean = statistics.mean(e["score"] for e in entries)
        rows["tpe"] = {"candidates": 1, "in_sample": mean, "loo": mean,
                       "worst": min((e["score"], s) for s, e in tpe.items()), "spread": spread(entries)}
        per_space["tpe"] = {s: e["score"] for s, e in tpe.items()}
        held_entries["tpe"] = tpe

    names = list(rows)
    print(f"{'strategy':<12}{'candidates':>11}{'in-sample':>11}{'held-out':>10}{'spread':>8}  worst held-out space")
    for name in names:
        r = rows[name]
        print(f"{name:<12}{r['candidates']:>11}{r['in_sample']:>11.3f}{r['loo']:>10.3f}{r['spread']:>8.3f}"
              f"  {r['worst'][1]} {r['worst'][0]:.3f}")
    print()
    spaces = sorted(next(iter(per_space.values())))
    print(f"{'held-out score':<28}" + "".join(f"{n:>11}" for n in names))
    for s in spaces:
        print(f"{s:<28}" + "".join(f"{per_space[n].get(s, float('nan')):>11.3f}" for n in names))
    print()
    print("option set chosen on the other spaces, per held-out space:")
    for n, chosen in chosen_options.items():
        if len(set(chosen.values())) == 1 and len(strategies[n]) == 1:
            continue
        print(f"  {n:<10} " + "; ".join(f"{s} {o}" for s, o in chosen.items()))
    print()
    print("above random search? (random scores 0 in expectation; 'clearly' = more than 2 standard errors")
    print("above 0 on every held-out space, the standard error bootstrapped over the repeats)")
    for n in names:
        weak = [f"{s} {e['score']:.3f} +- {standard_error(e):.3f}" for s, e in held_entries[n].items()
                if e["score"] <= 2 * standard_error(e)]
        print(f"  {n:<10} " + ("clearly, on every space" if not weak else "not clearly on " + "; ".join(weak)))

if __name__ == "__main__":
    main()
