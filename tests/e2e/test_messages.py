"""What the loop says, checked on real runs: a variant without parameters is named plainly ("naive",
never "naive{_=0}") in the decision log and the summaries; a run's warnings are said to have been gone
past only when the run went on; a start that does not fit the target is said not to, with a start that
was measured to fit."""
import json
import os
import re
import stat

from loop_support import check, query, run, run_json, tempdir, write_goal


def parameterless_variant_named_plainly(tmp, db):
    goal = write_goal(tmp, "naive.yaml", "name: naive\nkernel: {family: exp, shape: [250, 512], dtype: fp32}\n"
                                         "max_iterations: 1\nbudget: {evaluations: 3}\n")
    summary = run_json(["run", goal], db)
    run_id = str(summary["run_id"])
    for args in (["log", run_id], ["log", run_id, "--json"], ["trials", run_id], ["explain", run_id, "1"]):
        proc = run(args, db)
        check(proc.returncode == 0, f"{args}: exit {proc.returncode}: {proc.stderr}")
        check("_=0" not in proc.stdout and '"_"' not in proc.stdout, f"{args} shows a placeholder:\n{proc.stdout}")
    text = run(["log", run_id], db).stdout
    check("measure the goal's starting point (naive): " in text, f"the baseline is not named plainly:\n{text}")
    sweep = run_json(["sweep", goal, "--limit", "2"], db)
    log = json.loads(run(["log", str(sweep["run_id"]), "--json"], db).stdout)
    plans = [d for d in log if d["action"] == "sweep"]
    check(plans and plans[0]["evidence"]["baseline"] == "naive", f"the sweep's baseline: {plans}")


# A stand-in benchmark: configuration a=1 measures, others fail; with FAIL_ALL set every one fails.
BENCH = """#!/usr/bin/env python3
import json, os, sys
if sys.argv[1] != "1" or os.path.exists(os.path.join(os.path.dirname(__file__), "FAIL_ALL")):
    print("broken bench", file=sys.stderr)
    sys.exit(3)
print(json.dumps({"latency_s": 0.5}))
"""


def warnings_worded_by_outcome(tmp, db):
    bench = os.path.join(tmp, "bench.py")
    with open(bench, "w") as f:
        f.write(BENCH)
    os.chmod(bench, os.stat(bench).st_mode | stat.S_IXUSR)
    goal = write_goal(tmp, "cmd.yaml", "name: cmd\nkernel: {family: mykernel}\n"
                                       "target: {kind: command, argv: [./bench.py, \"{a}\"]}\n"
                                       "search: {strategy: grid, space: {a: [1, 2, 3]}}\nmax_iterations: 2\n")
    # Some candidates fail, the run completes: it went on past them.
    proc = run(["run", goal], db)
    check(proc.returncode == 0, f"cmd run: exit {proc.returncode}: {proc.stderr}")
    check("  warnings:    1; the run went on past them:\n    - 2 candidates failed on the target (trial "
          in proc.stdout, f"a completed run's warnings:\n{proc.stdout}")
    # The baseline fails, the run fails: it did not go on past anything.
    open(os.path.join(tmp, "FAIL_ALL"), "w").close()
    proc = run(["run", goal, "--no-cache"], db)
    check(proc.returncode == 1, f"cmd run failing: exit {proc.returncode}: {proc.stderr}")
    check("went on past" not in proc.stdout and
          "  warnings:    1; the run failed (stopped: above):\n    - 1 candidate failed on the target (trial "
          in proc.stdout, f"a failed run's warnings:\n{proc.stdout}")
    os.remove(os.path.join(tmp, "FAIL_ALL"))


def start_that_does_not_fit(tmp, db):
    # The fully blocked GEMM's default blocks need more SBUF than trn1 has at this shape.
    goal = write_goal(tmp, "big.yaml", "name: big\nkernel: {family: gemm, shape: {M: 8192, N: 512, K: 512}}\n"
                                       "target: trn1\nstart: {variant: blocked_mnk}\nmax_iterations: 1\n")
    proc = run(["run", goal], db)
    check(proc.returncode == 1, f"a start that does not fit: exit {proc.returncode}: {proc.stderr[-800:]}")
    stopped = [line for line in proc.stdout.splitlines() if line.startswith("  stopped:")]
    check(len(stopped) == 1, f"no stop reason:\n{proc.stdout}")
    reason = stopped[0]
    check(re.search(r"the baseline blocked_mnk\{[^}]*\} does not fit the target: sbuf_overflow: .*SBUF overflow",
                    reason), f"the stop reason does not say the start does not fit: {reason}")
    run_id = int(proc.stdout.split()[1].rstrip(":"))
    trials = {t[0]: t for t in query(db, "SELECT id, variant, params, status, metrics FROM trials WHERE run = ?",
                                     (run_id,))}
    # Each suggestion names a trial of this run that the target measured ok, with its figure.
    suggested = re.findall(r"(\w+) (?:with ([^;]*?)|at its defaults) fits \(([0-9.e+-]+) ms, trial (\d+)\)", reason)
    check(suggested, f"no measured suggestion: {reason}")
    for variant, changed, ms, trial in suggested:
        row = trials.get(int(trial))
        check(row is not None and row[3] == "ok" and row[1] == variant, f"suggested trial {trial}: {row}")
        latency = json.loads(row[4])["latency_s"]
        check(abs(latency * 1e3 - float(ms)) <= 1e-3 * latency * 1e3, f"trial {trial}: {ms} ms against {latency} s")
        params = json.loads(row[2])
        for item in filter(None, changed.split(", ")):
            name, value = item.split("=")
            check(str(params[name]) == value, f"trial {trial} has {name}={params[name]}, suggested {item}")
    check(suggested[0][0] == "blocked_mnk" and suggested[0][1] and "start there with start.params" in reason,
          f"no fitting configuration of the start variant: {reason}")
    # Within the evaluation budget: a budget of 3 leaves two probes (one of each kind) after the start.
    small = write_goal(tmp, "small.yaml", "name: small\nkernel: {family: gemm, shape: {M: 8192, N: 512, K: 512}}\n"
                                          "target: trn1\nstart: {variant: blocked_mnk}\nmax_iterations: 1\n"
                                          "budget: {evaluations: 3}\n")
    proc = run(["run", small, "--no-cache"], db)
    check(proc.returncode == 1, f"a start that does not fit, small budget: exit {proc.returncode}")
    small_run = int(proc.stdout.split()[1].rstrip(":"))
    variants = [v for (v,) in query(db, "SELECT variant FROM trials WHERE run = ? ORDER BY id", (small_run,))]
    check(len(variants) == 3 and variants[:2] == ["blocked_mnk", "blocked_mnk"] and variants[2] != "blocked_mnk",
          f"a budget of 3 measured {variants}")
    # The suggestion fits: a goal starting there runs.
    params = json.loads(trials[int(suggested[0][3])][2])
    fixed = write_goal(tmp, "fixed.yaml", "name: fixed\nkernel: {family: gemm, shape: {M: 8192, N: 512, K: 512}}\n"
                                          "target: trn1\nmax_iterations: 1\nbudget: {evaluations: 3}\n"
                                          f"start: {{variant: blocked_mnk, params: {json.dumps(params)}}}\n")
    proc = run(["run", fixed], db)
    check(proc.returncode == 0, f"the suggested start does not run: {proc.stdout}{proc.stderr[-500:]}")


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        parameterless_variant_named_plainly(tmp, db)
        warnings_worded_by_outcome(tmp, db)
        start_that_does_not_fit(tmp, db)
    print("ok")


if __name__ == "__main__":
    main()
