"""Many processes share one run through PostgreSQL (docs/distributed.md), on the throwaway cluster of
tests/support/postgres_cluster.py: workers measure a sweep's and a run's candidates; then the fault drills
(kill -9 a worker mid-trial, kill -9 the coordinating sweep and resume it, restart the server, drop every
connection). After each: one trial per configuration, nothing measured into the results twice, and each
result is the one the measuring program gives for its configuration."""
import functools
import json
import os
import signal
import subprocess
import sys
import time

from loop_support import BIN, check, fail, goal_path, psql as cluster_psql, run, run_json, tempdir, wait_until, write_goal

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
import postgres_cluster  # noqa: E402

STATE = postgres_cluster.load(os.environ["AUTOTUNE_TEST_POSTGRES"])
psql = functools.partial(cluster_psql, STATE)

# A measured program: sleeps a little (so that kills land while a trial is in flight) and reports a
# latency that is a known function of its configuration.
MEASURE = r"""
import sys, time
a, b = int(sys.argv[1]), int(sys.argv[2])
time.sleep(float(sys.argv[3]))
print('{"latency_s": %.9g}' % (1e-3 * (1 + (a - 5) ** 2 + (b - 3) ** 2)))
"""

GOAL = """
name: distributed-{name}
target:
  kind: command
  argv: [python3, measure.py, "{{a}}", "{{b}}", "{sleep}"]
  timeout_s: 60
search:
  space: {{a: [1, 2, 3, 4, 5, 6, 7, 8], b: [1, 2, 3, 4, 5]}}
"""
CONFIGURATIONS = 40


def expected_latency(params):
    return 1e-3 * (1 + (params["a"] - 5) ** 2 + (params["b"] - 3) ** 2)


def count(database, sql):
    """A count while the database may still be getting its schema (0 until then)."""
    text = psql(database, sql, must=False)
    return int(text) if text else 0


def new_database(name):
    psql("postgres", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    psql("postgres", f"CREATE DATABASE {name}")
    return STATE["url"] % name


def start_worker(url, *extra, tmpdir=None):
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    if tmpdir:
        env["TMPDIR"] = tmpdir
    return subprocess.Popen([BIN, "worker", "--db", url, "--json", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def worker_summary(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        fail(f"worker exited {proc.returncode}: {err[-2000:]}")
    return json.loads(out.strip().splitlines()[-1])


def check_one_result_per_configuration(database, run_id, what):
    rows = psql(database, f"SELECT params, status, metrics FROM trials WHERE run = {run_id}").splitlines()
    check(len(rows) == CONFIGURATIONS, f"{what}: {len(rows)} trials stored, expected {CONFIGURATIONS}")
    seen = set()
    for row in rows:
        params_text, status, metrics_text = row.split("|")
        params = json.loads(params_text)
        key = (params["a"], params["b"])
        check(key not in seen, f"{what}: configuration {key} stored twice")
        seen.add(key)
        check(status in ("ok", "cached"), f"{what}: {key} is {status}")
        latency = json.loads(metrics_text)["latency_s"]
        check(abs(latency - expected_latency(params)) < 1e-12, f"{what}: {key} measured {latency}")
    check(psql(database, f"SELECT status FROM runs WHERE id = {run_id}") == "completed", f"{what}: run not completed")


def sweep(goal, url, *extra, timeout=300):
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    return subprocess.Popen([BIN, "sweep", goal, "--db", url, "--json", "--no-cache", *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def finish(proc, what, timeout=300):
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        fail(f"{what} exited {proc.returncode}: {err[-2000:]}")
    return json.loads(out)


def main():
    with tempdir() as tmp:
        with open(os.path.join(tmp, "measure.py"), "w") as f:
            f.write(MEASURE)

        # 1. Workers only (--jobs 0): every configuration measured by the two workers, once.
        url = new_database("dist_basic")
        goal = write_goal(tmp, "basic.yaml", GOAL.format(name="basic", sleep=0.02))
        workers = [start_worker(url, "--idle-exit", "4") for _ in range(2)]
        result = finish(sweep(goal, url, "--jobs", "0"), "sweep --jobs 0")
        summaries = [worker_summary(w) for w in workers]
        check(result["configurations"] == CONFIGURATIONS, f"configurations: {result['configurations']}")
        check(result["measured_by_workers"] == CONFIGURATIONS, f"measured by workers: {result}")
        check(sum(s["measured"] for s in summaries) == CONFIGURATIONS, f"workers measured {summaries}")
        check(all(s["measured"] > 0 for s in summaries), f"one worker measured nothing: {summaries}")
        check_one_result_per_configuration("dist_basic", result["run_id"], "workers only")
        # A worker writes the run's goal into a folder of its own: links planted in its temporary folder
        # at the names such a folder once had (autotune-worker-<pid>-<run>, for the next pids) are not
        # written through.
        planted_url = new_database("dist_planted")
        planted_goal = write_goal(tmp, "planted.yaml", GOAL.format(name="planted", sleep=0.0))
        planted, elsewhere = os.path.join(tmp, "planted-tmp"), os.path.join(tmp, "elsewhere")
        os.makedirs(planted)
        os.makedirs(elsewhere)
        with open("/proc/sys/kernel/ns_last_pid") as f:
            last_pid = int(f.read())
        for pid in range(last_pid + 1, last_pid + 3000):
            os.symlink(elsewhere, os.path.join(planted, f"autotune-worker-{pid}-1"))
        worker = start_worker(planted_url, "--idle-exit", "4", tmpdir=planted)
        planted_result = finish(sweep(planted_goal, planted_url, "--jobs", "0"), "sweep --jobs 0 beside planted links")
        check(worker_summary(worker)["measured"] == CONFIGURATIONS, "the worker beside planted links measured less")
        check(planted_result["measured_by_workers"] == CONFIGURATIONS, f"planted: {planted_result}")
        check(os.listdir(elsewhere) == [], f"a worker wrote through a planted link: {os.listdir(elsewhere)}")
        check(not [n for n in os.listdir(planted) if not n.startswith("autotune-worker-") or
                   not os.path.islink(os.path.join(planted, n))], "a worker left a folder behind")

        # Every reading command works on PostgreSQL.
        for args in (["runs"], ["trials", str(result["run_id"])], ["log", str(result["run_id"])],
                     ["explain", str(result["run_id"]), "2"]):
            proc = run(args, url)
            check(proc.returncode == 0 and proc.stdout, f"{args}: {proc.returncode} {proc.stderr}")

        # 2. kill -9 a worker while it holds a claim: another takes it over after the lease, nothing twice.
        url = new_database("dist_kill_worker")
        goal = write_goal(tmp, "kill.yaml", GOAL.format(name="kill", sleep=0.3))
        victim = start_worker(url)
        coordinator = sweep(goal, url, "--jobs", "0")
        wait_until(lambda: count("dist_kill_worker", "SELECT COUNT(*) FROM trials") > 0 and
                   count("dist_kill_worker", "SELECT COUNT(*) FROM measurement_queue WHERE state = 'claimed'") > 0,
                   "the victim to claim a candidate")
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        survivor = start_worker(url, "--lease", "5", "--idle-exit", "8")
        result = finish(coordinator, "sweep after a worker was killed")
        worker_summary(survivor)
        check_one_result_per_configuration("dist_kill_worker", result["run_id"], "worker killed")
        retried = psql("dist_kill_worker", "SELECT COUNT(*) FROM measurement_queue WHERE attempts > 1")
        check(retried != "0", "the killed worker's claim was never handed over")

        # 3. kill -9 the coordinating sweep; workers go on; the resumed sweep uses their results.
        url = new_database("dist_kill_sweep")
        goal = write_goal(tmp, "resume.yaml", GOAL.format(name="resume", sleep=0.1))
        workers = [start_worker(url, "--idle-exit", "6") for _ in range(2)]
        coordinator = sweep(goal, url, "--jobs", "0")
        wait_until(lambda: count("dist_kill_sweep", "SELECT COUNT(*) FROM trials") >= 5, "some trials")
        coordinator.send_signal(signal.SIGKILL)
        coordinator.wait()
        run_id = int(psql("dist_kill_sweep", "SELECT MAX(id) FROM runs"))
        resumed = finish(sweep(goal, url, "--jobs", "0", "--resume", str(run_id)), "resumed sweep")
        summaries = [worker_summary(w) for w in workers]
        check(resumed["run_id"] == run_id, "the resume made a new run")
        check_one_result_per_configuration("dist_kill_sweep", run_id, "coordinator killed and resumed")
        measured = sum(s["measured"] for s in summaries)
        check(measured == CONFIGURATIONS, f"{measured} measurements for {CONFIGURATIONS} configurations")

        # 4. The server restarts mid-sweep: coordinator and workers reconnect and finish.
        url = new_database("dist_restart")
        goal = write_goal(tmp, "restart.yaml", GOAL.format(name="restart", sleep=0.1))
        workers = [start_worker(url, "--idle-exit", "6") for _ in range(2)]
        coordinator = sweep(goal, url, "--jobs", "1")
        wait_until(lambda: count("dist_restart", "SELECT COUNT(*) FROM trials") >= 5, "some trials")
        postgres_cluster.stop_server(STATE, "immediate")
        time.sleep(1.0)
        postgres_cluster.start_server(STATE)
        result = finish(coordinator, "sweep across a server restart")
        for w in workers:
            worker_summary(w)
        check_one_result_per_configuration("dist_restart", result["run_id"], "server restarted")

        # 5. Every connection is dropped mid-sweep (as by a proxy or a network blip).
        url = new_database("dist_drop")
        goal = write_goal(tmp, "drop.yaml", GOAL.format(name="drop", sleep=0.1))
        workers = [start_worker(url, "--idle-exit", "6") for _ in range(2)]
        coordinator = sweep(goal, url, "--jobs", "1")
        wait_until(lambda: count("dist_drop", "SELECT COUNT(*) FROM trials") >= 5, "some trials")
        psql("postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'dist_drop'")
        result = finish(coordinator, "sweep across dropped connections")
        for w in workers:
            worker_summary(w)
        check_one_result_per_configuration("dist_drop", result["run_id"], "connections dropped")

        # 6. The agentic loop with a worker: its decisions stay in the run's process, only measuring is
        # shared, so it makes the choices a local run makes and reaches the same best.
        url = new_database("dist_run")
        worker = start_worker(url, "--idle-exit", "5")
        shared = run_json(["run", goal_path("quickstart.yaml"), "--jobs", "0"], url)
        summary = worker_summary(worker)
        local = run_json(["run", goal_path("quickstart.yaml")], os.path.join(tmp, "local.db"))
        check(summary["measured"] >= shared["evaluations"] - 1, f"the worker measured {summary}, run {shared}")
        check(shared["best"]["latency_s"] == local["best"]["latency_s"] and shared["best"]["params"] == local["best"]["params"],
              f"best {shared['best']} with a worker, {local['best']} locally")
        check(shared["evaluations"] == local["evaluations"], "a different number of evaluations")
        # Resumed (every trial committed: nothing left to measure) and exported from PostgreSQL.
        resumed = run_json(["run", goal_path("quickstart.yaml"), "--jobs", "0", "--resume", str(shared["run_id"])], url)
        check(resumed["run_id"] == shared["run_id"] and resumed["measured"] == 0, f"resume: {resumed}")
        exported = os.path.join(tmp, "kernel.hpp")
        proc = run(["export", str(shared["run_id"]), "-o", exported], url)
        check(proc.returncode == 0 and os.path.getsize(exported) > 0, f"export: {proc.stderr}")

        # Bad input: --jobs 0 needs a shared database; an unreachable server is one line, exit 2.
        proc = run(["sweep", goal, "--jobs", "0"], os.path.join(tmp, "local.db"))
        check(proc.returncode == 2 and "needs a PostgreSQL --db" in proc.stderr, proc.stderr)
        bad_url = "postgresql://autotune@/nowhere?host=" + tmp
        proc = run(["worker", "--idle-exit", "1"], bad_url)
        check(proc.returncode == 2 and proc.stderr.count("\n") == 1 and "cannot connect" in proc.stderr, proc.stderr)
    print("ok")


if __name__ == "__main__":
    main()
