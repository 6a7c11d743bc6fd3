"""SIGINT while a suite runs two tasks at once (--jobs 2): both runs in progress are recorded as interrupted,
not only one of them, exit status 130; the next invocation resumes both (the same run ids) and completes them."""
import os

from loop_support import check, interrupt_when, query, run_json, tempdir, write_goal

# Two tasks the loop does not finish in a second on trn1 (both stop on their budget or iterations).
SUITE = """
name: two-at-once
targets: [trn1]
seed: 1
budget: {evaluations: 40}
max_iterations: 6
tasks:
  - name: silu
    kernel: {family: silu, shape: {rows: 4096, cols: 7168}, dtype: fp32}
    start: {variant: naive}
  - name: rope
    kernel: {family: rope, shape: {seq: 65536, heads: 1, head_dim: 128}, dtype: fp32}
    start: {variant: naive}
"""


def main():
    with tempdir() as tmp:
        suite = write_goal(tmp, "suite.yaml", SUITE)
        db = os.path.join(tmp, "suite.db")
        started = []  # the lines that say a run started; the second is the moment to interrupt

        def both_started(line):
            if " started (" in line:
                started.append(line)
            return len(started) == 2

        status, stderr = interrupt_when(["suite", suite, "--jobs", "2"], db, both_started)
        check(status == 130, f"exit {status} (130 expected): {stderr[-2000:]}")
        runs = query(db, "SELECT id, status, stop_reason FROM runs ORDER BY id")
        check(len(runs) == 2, f"two runs: {runs}")
        # A run that finished before the signal is completed; every other one is interrupted, none running.
        check(all(status in ("interrupted", "completed") for _, status, _ in runs), f"a run left running: {runs}")
        interrupted = [run_id for run_id, status, _ in runs if status == "interrupted"]
        check(interrupted, f"nothing interrupted: {runs}")
        ids = ", ".join(str(i) for i in interrupted)
        check(("runs " if len(interrupted) > 1 else "run ") + ids in stderr, stderr[-2000:])

        resumed = run_json(["suite", suite], db, timeout=600)
        check(query(db, "SELECT COUNT(*) FROM runs")[0][0] == 2, "resuming added a run")
        for row in resumed["rows"]:
            check(row["status"] == "completed", f"{row['task']}: {row['status']}")
            if row["run"] in interrupted:
                check(row["ran_now"], f"run {row['run']} was not resumed: {row}")
    print("ok")


if __name__ == "__main__":
    main()
