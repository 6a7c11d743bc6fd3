"""A strategy's options reach that strategy only: a goal's search.options for bayes, with a region small enough
for the explorer to enumerate it with the grid, and a param_explorer plugin that answers as docs/plugins.md
shows ({"strategy": "random", "budget": 4}) where the built-in chose coordinate with its own options. Both runs
complete; neither ends on an option the strategy it ran does not take."""
import json
import os
import stat

from loop_support import check, run, run_json, tempdir, write_goal

# The docs' example answer, the budget within what the request offers.
PLANNER = """#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    request = json.loads(line)["request"]
    reply = {"result": {"strategy": "random", "budget": min(4, request["budget"])},
             "decision": {"action": "plan_random", "rationale": "random over the region"}}
    print(json.dumps(reply), flush=True)
"""


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "options.db")

        # bayes's options, and a tiled space of 2 configurations, which the explorer enumerates (grid).
        goal = write_goal(tmp, "options.yaml", """name: options
kernel: {family: exp}
max_iterations: 4
budget: {evaluations: 30}
variants: [tiled]
start: {variant: tiled}
search: {strategy: bayes, options: {initial: 2}, space: {tile_size: [256, 512], unroll_factor: [1]}}
goal: {improvement: 0.9}
""")
        proc = run(["run", goal, "--json"], db)
        check(proc.returncode in (0, 1) and proc.stdout.strip(),
              f"a goal with bayes options exited {proc.returncode}: {proc.stderr[-1500:]}")
        summary = json.loads(proc.stdout)
        check(summary["status"] == "completed", f"bayes options: {summary['status']} ({summary['stop_reason']})")
        log = json.loads(run(["log", str(summary["run_id"]), "--json"], db).stdout)
        check(any(d["action"] == "search:grid" for d in log), "the explorer never enumerated a region (grid)")

        planner = os.path.join(tmp, "planner.py")
        with open(planner, "w") as f:
            f.write(PLANNER)
        os.chmod(planner, os.stat(planner).st_mode | stat.S_IXUSR)
        goal = write_goal(tmp, "planner.yaml", """name: planner
kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}
goal: {improvement: 0.5}
max_iterations: 3
budget: {evaluations: 10, wall_time_s: 120}
search: {strategy: bayes, batch_size: 2}
start: {variant: tiled}
skills:
  - {name: planner, command: [./planner.py], role: param_explorer, replaces: param_explorer}
""")
        summary = run_json(["run", goal], db)
        check(summary["status"] == "completed", f"planner run: {summary['status']} ({summary['stop_reason']})")
        log = json.loads(run(["log", str(summary["run_id"]), "--json"], db).stdout)
        calls = [d for d in log if d["proposer"] == "plugin:planner"]
        check(calls and all(d["action"] == "plan_random" for d in calls),
              f"the planner's answers: {[(d['action'], d['outcome']) for d in calls]}")
        check(summary["evaluations"] > 1, f"nothing searched after the baseline: {summary['evaluations']}")
    print("ok")


if __name__ == "__main__":
    main()
