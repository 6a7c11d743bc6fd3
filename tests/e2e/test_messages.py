"""What the loop says, checked on real runs: a variant without parameters is named plainly ("naive",
never "naive{_=0}") in the decision log and the summaries."""
import json
import os

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


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        parameterless_variant_named_plainly(tmp, db)
    print("ok")


if __name__ == "__main__":
    main()
