"""The PostgreSQL server goes away for 66 s in the middle of a sweep with its own job and two workers, on a
throwaway cluster of its own (tests/support/postgres_cluster.py): stopping the shared one would take the
server from the other PostgreSQL tests running beside it.
The outage starts while the sweep is committing a batch of trials (a lock this test holds on `trials`
keeps the commit waiting until the server goes): a store call used to give up after 60 s and end the run;
now a writer waits for the server (AUTOTUNE_DB_OUTAGE_S, 600 s by default), and the sweep finishes within
a bounded time once the server is back, one trial per configuration, none lost, none twice. Results
stored during the outage are kept too.
A claim lost with its connection (its COMMIT went through unheard) is measured by its claimer: by the
sweep itself when the sweep's own job claimed it, and by the worker when a worker did (the row the store
reports under the worker's heartbeat, unknown to its jobs)."""
import functools
import json
import os
import subprocess
import sys
import time

from loop_support import BIN, check, fail, psql as cluster_psql, tempdir, write_goal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import postgres_cluster  # noqa: E402

STATE = {}  # this test's own cluster, started by main()
psql = functools.partial(cluster_psql, STATE, must=False)
OUTAGE_S = 66           # beyond the 60 s a store call used to wait
RECOVERY_S = 90         # the sweep must end within this once the server is back

MEASURE = r"""
import sys, time
a, b = int(sys.argv[1]), int(sys.argv[2])
time.sleep(0.5)
print('{"latency_s": %.9g}' % (1e-3 * (1 + (a - 3) ** 2 + (b - 2) ** 2)))
"""
GOAL = """
name: outage
target: {kind: command, argv: [python3, measure.py, "{a}", "{b}"], timeout_s: 60}
search:
  space: {a: [1, 2, 3, 4, 5, 6], b: [1, 2, 3]}
"""
CONFIGURATIONS = 18


def main():
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    psql("postgres", "DROP DATABASE IF EXISTS pg_outage WITH (FORCE)")
    check(psql("postgres", "CREATE DATABASE pg_outage") is not None, "CREATE DATABASE")
    url = STATE["url"] % "pg_outage"
    with tempdir() as tmp:
        with open(os.path.join(tmp, "measure.py"), "w") as f:
            f.write(MEASURE)
        goal = write_goal(tmp, "outage.yaml", GOAL)
        workers = [subprocess.Popen([BIN, "worker", "--db", url, "--json", "--idle-exit", "20"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
        coordinator = subprocess.Popen([BIN, "sweep", goal, "--db", url, "--json", "--no-cache", "--jobs", "1"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.time() + 60
            while time.time() < deadline and int(psql("pg_outage", "SELECT COUNT(*) FROM trials") or 0) < 3:
                time.sleep(0.1)
            # The owner's next commit waits on this lock until the server goes: the outage lasts through it.
            holder = subprocess.Popen(["psql", url, "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
            holder.stdin.write("BEGIN;\nLOCK TABLE trials IN EXCLUSIVE MODE;\nSELECT pg_sleep(600);\n")
            holder.stdin.flush()
            deadline = time.time() + 60
            while time.time() < deadline and psql("pg_outage", "SELECT COUNT(*) FROM pg_stat_activity WHERE "
                                                  "wait_event_type = 'Lock' AND query LIKE 'INSERT INTO trials%'") != "1":
                time.sleep(0.05)
            check(time.time() < deadline, "the sweep's commit never waited on the lock")
            # Every claimer is mid-measurement or holding a result when the server goes.
            postgres_cluster.stop_server(STATE, "immediate")
            holder.kill()
            holder.wait()
            time.sleep(OUTAGE_S)
            postgres_cluster.start_server(STATE)
            try:
                out, err = coordinator.communicate(timeout=RECOVERY_S)
            except subprocess.TimeoutExpired:
                rows = psql("pg_outage", "SELECT id, state, worker, attempts FROM measurement_queue "
                                         "WHERE state <> 'committed' ORDER BY id")
                fail(f"the sweep did not finish within {RECOVERY_S} s of the server's return; queue: {rows}")
            check(coordinator.returncode == 0, f"sweep exited {coordinator.returncode}: {err[-2000:]}")
            result = json.loads(out)
            rows = psql("pg_outage", f"SELECT params, status FROM trials WHERE run = {result['run_id']}").splitlines()
            keys = [tuple(sorted(json.loads(r.split("|")[0]).items())) for r in rows]
            check(len(keys) == CONFIGURATIONS and len(set(keys)) == CONFIGURATIONS,
                  f"{len(keys)} trials, {len(set(keys))} configurations, expected {CONFIGURATIONS}")
            check(all(r.split("|")[1] == "ok" for r in rows), f"statuses: {rows}")
            check(psql("pg_outage", f"SELECT status FROM runs WHERE id = {result['run_id']}") == "completed",
                  "the run is not completed")
        finally:
            for p in [coordinator, *workers]:
                p.kill()
                p.wait()
        check_lost_claim(tmp, env)
        check_worker_lost_claim(tmp, env)
    print("ok")


def check_lost_claim(tmp, env):
    """A claim whose COMMIT went through while the connection broke: the claimer never heard of it, and its
    row stays claimed under the claimer's live heartbeat. Made here by claiming a queued row in the sweep's
    name; the sweep must measure it itself and finish."""
    psql("postgres", "DROP DATABASE IF EXISTS pg_lost_claim WITH (FORCE)")
    check(psql("postgres", "CREATE DATABASE pg_lost_claim") is not None, "CREATE DATABASE")
    url = STATE["url"] % "pg_lost_claim"
    goal = write_goal(tmp, "lost.yaml", GOAL.replace("name: outage", "name: lost-claim"))
    coordinator = subprocess.Popen([BIN, "sweep", goal, "--db", url, "--json", "--no-cache", "--jobs", "1"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 60
        claimer = None
        while time.time() < deadline and not claimer:
            queued = psql("pg_lost_claim", "SELECT COUNT(*) FROM measurement_queue WHERE state = 'queued'")
            if queued and int(queued) >= 5:
                claimer = psql("pg_lost_claim", "SELECT id FROM workers WHERE id LIKE '%:coordinator' LIMIT 1")
            time.sleep(0.05)
        check(claimer, "the sweep never heartbeat")
        lost = psql("pg_lost_claim", f"WITH c AS (UPDATE measurement_queue SET state = 'claimed', worker = '{claimer}', "
                                     "heartbeat = extract(epoch from now()), attempts = attempts + 1 WHERE id = "
                                     "(SELECT max(id) FROM measurement_queue WHERE state = 'queued') RETURNING id) "
                                     "SELECT id FROM c")
        check(lost, "no queued row left to claim")
        try:
            out, err = coordinator.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            fail(f"the sweep waits for the row {lost} it claimed without knowing: "
                 + str(psql("pg_lost_claim", f"SELECT state, worker FROM measurement_queue WHERE id = {lost}")))
        check(coordinator.returncode == 0, f"sweep exited {coordinator.returncode}: {err[-2000:]}")
        result = json.loads(out)
        count = psql("pg_lost_claim", f"SELECT COUNT(DISTINCT config_hash) FROM trials WHERE run = {result['run_id']}")
        total = psql("pg_lost_claim", f"SELECT COUNT(*) FROM trials WHERE run = {result['run_id']}")
        check(count == total == str(CONFIGURATIONS), f"{total} trials of {count} configurations")
        attempts = psql("pg_lost_claim", f"SELECT attempts FROM measurement_queue WHERE id = {lost}")
        check(attempts == "1", f"the lost claim's row was claimed {attempts} times")
    finally:
        coordinator.kill()
        coordinator.wait()


def check_worker_lost_claim(tmp, env):
    """The same for a worker: a row claimed in its name that none of its jobs knows of stays claimed under
    its live heartbeat, and with the sweep leaving all measuring to workers (--jobs 0) no one else would
    take it. The worker must find it in what its heartbeat renews and measure it, so the sweep finishes."""
    psql("postgres", "DROP DATABASE IF EXISTS pg_worker_lost_claim WITH (FORCE)")
    check(psql("postgres", "CREATE DATABASE pg_worker_lost_claim") is not None, "CREATE DATABASE")
    url = STATE["url"] % "pg_worker_lost_claim"
    goal = write_goal(tmp, "worker-lost.yaml", GOAL.replace("name: outage", "name: worker-lost-claim"))
    worker = subprocess.Popen([BIN, "worker", "--db", url, "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    coordinator = subprocess.Popen([BIN, "sweep", goal, "--db", url, "--json", "--no-cache", "--jobs", "0"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 60
        claimer = None
        while time.time() < deadline and not claimer:
            queued = psql("pg_worker_lost_claim", "SELECT COUNT(*) FROM measurement_queue WHERE state = 'queued'")
            if queued and int(queued) >= 5:
                claimer = psql("pg_worker_lost_claim", "SELECT id FROM workers WHERE id LIKE '%:worker' LIMIT 1")
            time.sleep(0.05)
        check(claimer, "the worker never heartbeat")
        lost = psql("pg_worker_lost_claim",
                    f"WITH c AS (UPDATE measurement_queue SET state = 'claimed', worker = '{claimer}', "
                    "heartbeat = extract(epoch from now()), attempts = attempts + 1 WHERE id = "
                    "(SELECT max(id) FROM measurement_queue WHERE state = 'queued') RETURNING id) SELECT id FROM c")
        check(lost, "no queued row left to claim")
        try:
            out, err = coordinator.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            fail(f"the sweep waits for the row {lost} its worker claimed without knowing: "
                 + str(psql("pg_worker_lost_claim", f"SELECT state, worker FROM measurement_queue WHERE id = {lost}")))
        check(coordinator.returncode == 0, f"sweep exited {coordinator.returncode}: {err[-2000:]}")
        result = json.loads(out)
        db = "pg_worker_lost_claim"
        count = psql(db, f"SELECT COUNT(DISTINCT config_hash) FROM trials WHERE run = {result['run_id']}")
        total = psql(db, f"SELECT COUNT(*) FROM trials WHERE run = {result['run_id']}")
        check(count == total == str(CONFIGURATIONS), f"{total} trials of {count} configurations")
        row = psql(db, f"SELECT attempts, worker FROM measurement_queue WHERE id = {lost}")
        check(row == f"1|{claimer}", f"the lost claim's row: attempts|worker = {row}, expected 1|{claimer}")
    finally:
        for p in (coordinator, worker):
            p.kill()
            p.wait()
    check("claimed by this worker but not measured" in worker.stderr.read(), "the worker did not say what it found")


if __name__ == "__main__":
    with tempdir() as cluster:
        state_file = os.path.join(cluster, "cluster.json")
        postgres_cluster.start(state_file)
        try:
            STATE.update(postgres_cluster.load(state_file))
            main()
        finally:
            postgres_cluster.stop(state_file)
