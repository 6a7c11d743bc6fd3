"""A worker interrupted (SIGTERM, SIGINT) while it measures, on the throwaway cluster of
tests/support/postgres_cluster.py: it exits with 130 and one line, and stores no result for the
candidates it held (the interruption kills their measuring programs, which is no result of theirs):
their rows stay claimed, for another claimer to take after the lease, and no trial of the run says
"killed by signal"."""
import functools
import os
import signal
import subprocess
import sys
import time

from loop_support import BIN, check, psql as cluster_psql, tempdir, wait_until, write_goal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import postgres_cluster  # noqa: E402

STATE = postgres_cluster.load(os.environ["AUTOTUNE_TEST_POSTGRES"])
psql = functools.partial(cluster_psql, STATE)

# The first measurement (the sweep's baseline) answers at once; every other takes far longer than the
# test waits, so none ends on its own.
MEASURE = r"""
import os, sys, time
try:
    os.close(os.open("first-measured", os.O_CREAT | os.O_EXCL))
except FileExistsError:
    time.sleep(60)
print('{"latency_s": %d}' % (1 + int(sys.argv[1])))
"""

GOAL = """
name: worker-interrupt
target:
  kind: command
  argv: [python3, measure.py, "{a}"]
  timeout_s: 120
search:
  space: {a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}
"""
JOBS = 4


def clean_env():
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    return env


def main():
    database = "worker_interrupt"
    psql("postgres", f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    psql("postgres", f"CREATE DATABASE {database}")
    url = STATE["url"] % database
    with tempdir() as tmp:
        with open(os.path.join(tmp, "measure.py"), "w") as f:
            f.write(MEASURE)
        goal = write_goal(tmp, "goal.yaml", GOAL)
        sweep = subprocess.Popen([BIN, "sweep", goal, "--db", url, "--jobs", "0", "--no-cache"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env())
        try:
            # The interruption kills the measuring programs; a job that saw one die before the worker
            # exited stored it as failed. Several rounds of several jobs each, so that the race shows.
            for round_number, sent in enumerate([signal.SIGTERM, signal.SIGINT] * 4):
                worker = subprocess.Popen([BIN, "worker", "--db", url, "--jobs", str(JOBS)], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, env=clean_env())
                wait_until(lambda: psql(database, "SELECT COUNT(*) FROM measurement_queue WHERE state = 'claimed'",
                                            must=False) == str(JOBS), f"round {round_number}: the worker to claim {JOBS} candidates")
                time.sleep(0.5)  # the measuring programs are running
                finished = psql(database, "SELECT COUNT(*) FROM measurement_queue WHERE state IN ('done', 'committed')")
                worker.send_signal(sent)
                _, err = worker.communicate(timeout=60)
                check(worker.returncode == 130, f"round {round_number}: the worker exited {worker.returncode}: {err}")
                check("interrupted" in err and "Traceback" not in err, f"round {round_number}: {err}")
                after = psql(database, "SELECT COUNT(*) FROM measurement_queue WHERE state IN ('done', 'committed')")
                stored = psql(database, "SELECT id, result FROM measurement_queue WHERE result LIKE '%signal%'")
                check(after == finished, f"round {round_number} ({sent.name}): the interrupted worker stored results: "
                                         f"{stored}")
                # Hand the claims back for the next round, as the lease would.
                psql(database, "UPDATE measurement_queue SET state = 'queued', worker = '' WHERE state = 'claimed'")
            trials = psql(database, "SELECT COUNT(*) FROM trials WHERE error LIKE '%signal%'")
            check(trials == "0", f"{trials} trials record a measurement killed by the worker's interruption")
        finally:
            sweep.kill()
            sweep.wait()
    print("ok")


if __name__ == "__main__":
    main()
