"""A run's wall-time budget holds when it measures through the queue of a PostgreSQL database (the throwaway
cluster of tests/support/postgres_cluster.py): with --jobs 0 and no worker, and with its own job measuring a
program that outlasts the budget, the run ends soon after the budget instead of waiting for ever, each
candidate cut short recorded as a timeout saying the budget ran out, and the run is not left running."""
import functools
import os
import subprocess
import sys

from loop_support import BIN, check, fail, psql as cluster_psql, tempdir, write_goal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import postgres_cluster  # noqa: E402

STATE = postgres_cluster.load(os.environ["AUTOTUNE_TEST_POSTGRES"])
psql = functools.partial(cluster_psql, STATE)

GOAL = """
name: wall-time-{name}
target:
  kind: command
  argv: [python3, -c, "import time; time.sleep(600)", "{{a}}"]
  timeout_s: 600
search:
  space: {{a: [1, 2, 3, 4]}}
budget: {{wall_time_s: 3}}
"""
BUDGET_CUT = "wall-time budget ran out"


def main():
    with tempdir() as tmp:
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        for jobs in ("0", "1"):
            database = f"wall_time_jobs{jobs}"
            psql("postgres", f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            psql("postgres", f"CREATE DATABASE {database}")
            goal = write_goal(tmp, f"goal{jobs}.yaml", GOAL.format(name=jobs))
            try:
                proc = subprocess.run([BIN, "run", goal, "--db", STATE["url"] % database, "--jobs", jobs],
                                      capture_output=True, text=True, timeout=60, env=env)
            except subprocess.TimeoutExpired:
                fail(f"--jobs {jobs}: the run was still waiting 60 s into a 3 s wall-time budget")
            check("Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr)
            status = psql(database, "SELECT status FROM runs")
            check(status in ("completed", "failed"), f"--jobs {jobs}: the run is {status}: {proc.stderr[-800:]}")
            trials = psql(database, "SELECT status, error FROM trials").splitlines()
            check(trials, f"--jobs {jobs}: no trial recorded: {proc.stderr[-800:]}")
            for row in trials:
                check(row.startswith("timeout|") and BUDGET_CUT in row, f"--jobs {jobs}: trial {row}")
    print("ok")


if __name__ == "__main__":
    main()
