"""A screened run whose device fails some candidates and times every other one alike goes on to its budget.

The device is a command target that fails every candidate with kv_tile=512 (a kernel that does not load) and
gives every other one the same latency, so bayes passes over a plateau and configurations implied to fail
while the screen asks it for rounds of 16 proposals: when fewer are left that it does not pass over, the
round must end with them, where the run aborted. Nothing here times anything."""
import os
import sys

from loop_support import check, query, run, tempdir, write_goal

DEVICE = """import json, os
params = json.loads(os.environ["AUTOTUNE_PARAMS"])
if params["kv_tile"] == 512:
    raise SystemExit("device error: the kernel did not load")
print(json.dumps({"latency_s": 5e-4}))
"""


def main():
    with tempdir() as tmp:
        write_goal(tmp, "device.py", DEVICE)
        goal = write_goal(tmp, "goal.yaml", f"""
name: screened-failing-device
kernel: {{family: attention}}
target: {{kind: command, argv: [{sys.executable}, device.py]}}
search:
  strategy: bayes
  space: {{kv_tile: [512, 1024], q_tiles: [1, 2, 4], pipeline_depth: [1, 2], dma_transpose: [0, 2]}}
screen:
  target: trn2
  keep: 2
  propose: 16
  kernel: {{family: attention, variant: flash_banked, shape: {{seq: 1024, q_heads: 4, kv_heads: 2, head_dim: 128}},
           dtype: fp32}}
start: {{params: {{kv_tile: 1024, q_tiles: 2, pipeline_depth: 2, dma_transpose: 0}}}}
max_iterations: 3
budget: {{evaluations: 10}}
""")
        db = os.path.join(tmp, "run.db")
        proc = run(["run", goal], db)
        check(proc.returncode == 0, f"the run exited {proc.returncode}: {proc.stderr[-1500:]}")
        rows = query(db, "SELECT status, error FROM trials ORDER BY id")
        failed = [error for status, error in rows if status == "failed"]
        check(len(rows) == 10 and failed and all("device error: the kernel did not load" in e for e in failed),
              f"trials {rows}")
        check(query(db, "SELECT status FROM runs")[0][0] == "completed", "the run is not completed")
    print("ok")


if __name__ == "__main__":
    main()
