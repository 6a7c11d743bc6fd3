"""What the loop says, checked on real runs: a variant without parameters is named plainly ("naive",
never "naive{_=0}") in the decision log and the summaries; a run's warnings are said to have been gone
past only when the run went on."""
import json
import os
import stat

from loop_support import check, run, run_json, tempdir, write_goal


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


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        parameterless_variant_named_plainly(tmp, db)
        warnings_worded_by_outcome(tmp, db)
    print("ok")


if __name__ == "__main__":
    main()
