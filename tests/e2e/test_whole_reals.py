"""A whole number written as a real is the domain's integer wherever a parameter value comes in: a goal's
`start.params` (`tile_m: 64.0`) and a generator plugin's probe (Python's `128 / 2` is 64.0). Both pass the
domain check, so both must be measured as 64, not recorded as invalid ("not an integer")."""
import json
import os
import stat

from loop_support import check, query, run, run_json, tempdir, write_goal

# A replacing generator whose one idea probes tile_m = 128 / 2.
HALVER = """#!/usr/bin/env python3
import json, sys
for line in sys.stdin:
    request = json.loads(line)["request"]
    idea = {"id": "half", "kind": "structural", "variant": "tiled",
            "probes": [{"variant": "tiled", "params": {"tile_m": 128 / 2, "tile_n": 512 / 2}}]}
    print(json.dumps({"result": {"ideas": [idea]}, "decision": {"action": "halve", "rationale": "halve"}}),
          flush=True)
"""

GOAL = """name: NAME
kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}
goal: {improvement: 0.9}
max_iterations: 1
budget: {evaluations: 4, wall_time_s: 120}
search: {strategy: random, batch_size: 1}
"""


def trials(db, run_id):
    return [(json.loads(params), status, error) for params, status, error in
            query(db, "SELECT params, status, error FROM trials WHERE run = ? ORDER BY id", (run_id,))]


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "reals.db")

        goal = write_goal(tmp, "start.yaml", GOAL.replace("NAME", "start") +
                          "start: {variant: tiled, params: {tile_m: 64.0}}\n")
        summary = run_json(["run", goal], db)
        check(summary["status"] == "completed", f"start 64.0: {summary['status']} ({summary['stop_reason']})")
        baseline = trials(db, summary["run_id"])[0]
        check(baseline[0]["tile_m"] == 64 and baseline[1] == "ok", f"the baseline of tile_m: 64.0: {baseline}")

        halver = os.path.join(tmp, "halver.py")
        with open(halver, "w") as f:
            f.write(HALVER)
        os.chmod(halver, os.stat(halver).st_mode | stat.S_IXUSR)
        goal = write_goal(tmp, "probe.yaml", GOAL.replace("NAME", "probe") + """start: {variant: tiled}
skills:
  - {name: halver, command: [./halver.py], role: kernel_generator, replaces: kernel_generator}
""")
        summary = run_json(["run", goal], db)
        probed = [t for t in trials(db, summary["run_id"]) if t[0]["tile_m"] == 64 and t[0]["tile_n"] == 256]
        check(probed and all(status == "ok" for _, status, _ in probed),
              f"the probe of tile_m 128 / 2: {trials(db, summary['run_id'])}")
        proc = run(["log", str(summary["run_id"]), "--json"], db)
        calls = [d for d in json.loads(proc.stdout) if d["proposer"] == "plugin:halver"]
        check(calls and calls[0]["action"] == "halve", f"the plugin's answer: {calls[:1]}")
    print("ok")


if __name__ == "__main__":
    main()
