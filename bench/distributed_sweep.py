#!/usr/bin/env python3
"""Sharing a sweep through PostgreSQL: throughput with 1, 2 and 4 workers, the store's overhead per trial
against SQLite, claim latency, and fault drills counting trials lost and duplicated.

    bench/distributed_sweep.py [--autotune build/autotune] [--sleep 0.05] [--repeats 3]

Starts a throwaway PostgreSQL cluster (tests/support/postgres_cluster.py) and removes it afterwards.
The measured program is a command target that waits `--sleep` seconds and prints a latency that is a
function of its configuration: a stand-in for a device measurement, where the worker mostly waits. A
600-configuration sweep runs with `--jobs 0` (every candidate to the workers) and 1, 2, 4 single-job
workers. The overhead compares the same simulated sweep (no waiting) on SQLite and on PostgreSQL with
one local job. Figures are medians of --repeats runs; ratios come from the same run of the bench."""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
import postgres_cluster  # noqa: E402

MEASURE = r"""
import sys, time
a, b = int(sys.argv[1]), int(sys.argv[2])
time.sleep(float(sys.argv[3]))
print('{"latency_s": %.9g}' % (1e-3 * (1 + (a - 13) ** 2 + (b - 7) ** 2)))
"""
GOAL = """
name: distributed-bench
target: {{kind: command, argv: [python3, measure.py, "{{a}}", "{{b}}", "{sleep}"], timeout_s: 60}}
search:
  space: {{a: {a}, b: {b}}}
"""
CONFIGURATIONS = 600


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--autotune", default=os.path.join(HERE, "..", "build", "autotune"))
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parts", default="throughput,overhead,drills",
                        help="which parts to run, comma-separated: throughput, overhead, drills")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="autotune-dist-bench-") as tmp:
        bench = Bench(args, tmp)
        try:
            for part in args.parts.split(","):
                getattr(bench, part.strip())()
        finally:
            postgres_cluster.stop(bench.state_file)


class Bench:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.binary = os.path.abspath(args.autotune)
        self.env = dict(os.environ)
        self.env.pop("AUTOTUNE_DB", None)
        self.state_file = os.path.join(tmp, "cluster.json")
        postgres_cluster.start(self.state_file)
        self.state = postgres_cluster.load(self.state_file)
        with open(os.path.join(tmp, "measure.py"), "w") as f:
            f.write(MEASURE)
        self.goal = os.path.join(tmp, "goal.yaml")
        with open(self.goal, "w") as f:
            f.write(GOAL.format(sleep=args.sleep, a=list(range(1, 31)), b=list(range(1, 21))))
        self.databases = 0

    def psql(self, database, sql):
        out = subprocess.run(["psql", self.state["url"] % database, "-At", "-c", sql], capture_output=True, text=True,
                             check=True)
        return out.stdout.strip()

    def fresh(self):
        self.databases += 1
        name = f"bench_{self.databases}"
        self.psql("postgres", f"CREATE DATABASE {name}")
        return name, self.state["url"] % name

    def worker(self, url, *extra):
        return subprocess.Popen([self.binary, "worker", "--db", url, "--json", *extra], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, env=self.env)

    def sweep(self, url, *extra):
        return subprocess.Popen([self.binary, "sweep", self.goal, "--db", url, "--json", "--no-cache", *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=self.env)

    @staticmethod
    def result(proc):
        out, _ = proc.communicate(timeout=1800)
        if proc.returncode != 0:
            sys.exit(f"exit {proc.returncode}")
        return json.loads(out.strip().splitlines()[-1])

    def lost_and_duplicated(self, database, run_id):
        per_config = self.psql(database, f"SELECT COUNT(*) FROM trials WHERE run = {run_id} GROUP BY config_hash")
        counts = [int(c) for c in per_config.split()]
        return CONFIGURATIONS - len(counts), sum(c - 1 for c in counts)

    def throughput(self):
        """A sweep measured by 1, 2, 4 single-job workers (--jobs 0)."""
        print(f"sweep of {CONFIGURATIONS} configurations, each measurement waits {self.args.sleep} s "
              f"(median of {self.args.repeats})")
        rates = {}
        for count in (1, 2, 4):
            walls, claims = [], []
            for _ in range(self.args.repeats):
                database, url = self.fresh()
                workers = [self.worker(url, "--idle-exit", "2") for _ in range(count)]
                summary = self.result(self.sweep(url, "--jobs", "0"))
                claims += [self.result(w)["mean_claim_s"] for w in workers]
                lost, duplicated = self.lost_and_duplicated(database, summary["run_id"])
                assert lost == 0 and duplicated == 0, (lost, duplicated)
                walls.append(summary["wall_time_s"])
            wall = statistics.median(walls)
            rates[count] = CONFIGURATIONS / wall
            print(f"  {count} worker(s): {wall:6.1f} s  {rates[count]:6.1f} trials/s  "
                  f"x{rates[count] / rates[1]:.2f} of 1 worker  claim {1000 * statistics.median(claims):.2f} ms")

    def overhead(self):
        """The store's overhead per trial: a simulated sweep (no waiting), SQLite against PostgreSQL."""
        sim_goal = os.path.join(HERE, "..", "configs", "goals", "quickstart.yaml")
        walls = {"sqlite": [], "postgresql": []}
        for i in range(self.args.repeats):
            for kind in walls:
                url = os.path.join(self.tmp, f"overhead-{i}.db") if kind == "sqlite" else self.fresh()[1]
                proc = subprocess.run([self.binary, "sweep", sim_goal, "--db", url, "--json", "--no-cache", "--jobs",
                                       "1", "--limit", str(CONFIGURATIONS)], capture_output=True, text=True,
                                      env=self.env, check=True)
                walls[kind].append(json.loads(proc.stdout)["wall_time_s"])
        sqlite, postgres = statistics.median(walls["sqlite"]), statistics.median(walls["postgresql"])
        print(f"simulated sweep of {CONFIGURATIONS} with 1 job (median of {self.args.repeats}): SQLite {sqlite:.2f} s, "
              f"PostgreSQL through the queue {postgres:.2f} s: {1000 * (postgres - sqlite) / CONFIGURATIONS:.2f} ms "
              f"more per trial")

    def drills(self):
        """The fault drills on the same sweep with two workers."""
        print("fault drills (2 workers):")
        self.drill("kill -9 a worker mid-trial", self.kill_worker)
        self.drill("kill -9 the sweep, then resume it", self.kill_sweep)
        self.drill("restart the server", self.restart_server)
        self.drill("drop every connection", self.drop_connections)

    def drill(self, name, fault):
        database, url = self.fresh()
        workers = [self.worker(url, "--idle-exit", "8", "--lease", "5") for _ in range(2)]
        coordinator = self.sweep(url, "--jobs", "0")
        while self.trials_so_far(database) < 100:
            time.sleep(0.1)
        coordinator, workers = fault(database, url, coordinator, workers)
        summary = self.result(coordinator)
        measured = sum(self.result(w)["measured"] for w in workers if w is not None)
        lost, duplicated = self.lost_and_duplicated(database, summary["run_id"])
        retried = self.psql(database, "SELECT COUNT(*) FROM measurement_queue WHERE attempts > 1")
        print(f"  {name:34s} trials lost {lost}, duplicated {duplicated}; claims handed over {retried}; "
              f"measurements stored by the workers that lived {measured}")

    def trials_so_far(self, database):
        if self.psql(database, "SELECT to_regclass('trials') IS NOT NULL") != "t":
            return 0
        return int(self.psql(database, "SELECT COUNT(*) FROM trials"))

    def kill_worker(self, database, url, coordinator, workers):
        workers[0].send_signal(signal.SIGKILL)
        workers[0].wait()
        return coordinator, [None, workers[1], self.worker(url, "--idle-exit", "8", "--lease", "5")]

    def kill_sweep(self, database, url, coordinator, workers):
        coordinator.send_signal(signal.SIGKILL)
        coordinator.wait()
        run_id = self.psql(database, "SELECT MAX(id) FROM runs")
        return self.sweep(url, "--jobs", "0", "--resume", run_id), workers

    def restart_server(self, database, url, coordinator, workers):
        postgres_cluster.stop_server(self.state, "immediate")
        time.sleep(1)
        postgres_cluster.start_server(self.state)
        return coordinator, workers

    def drop_connections(self, database, url, coordinator, workers):
        self.psql("postgres", f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'")
        return coordinator, workers


if __name__ == "__main__":
    main()
