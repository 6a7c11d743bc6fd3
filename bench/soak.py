#!/usr/bin/env python3
"""Soak: kill -9 autotune at random moments, resume, and check nothing committed was lost.

For each round, one of the goals is started (as `run`, or as `sweep` for the sweep goals) on its own
database, killed with SIGKILL after a random delay, and resumed with --resume until it ends (it may be
killed again while resuming). After each kill the trials committed before it must all still be there
(trials lost: must be 0), `PRAGMA integrity_check` must say ok, and the finished run must reach the same
best as an uninterrupted run of the same goal and seed.

    python3 bench/soak.py [--rounds 50] [--seed 1] [--bin build/autotune]
"""
import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOALS = [("run", "quickstart.yaml"), ("run", "exp-profiler.yaml"), ("sweep", "exp-profiler.yaml")]


def query(db, sql, params=()):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def best_of(db, run_id):
    rows = query(db, "SELECT variant, params FROM trials WHERE id = (SELECT best_trial FROM runs WHERE id = ?)",
                 (run_id,))
    return rows[0] if rows else None


def command(binary, mode, goal, db, resume=None):
    args = [binary, mode, goal, "--db", db, "--no-cache"]
    if mode == "sweep":
        args += ["--jobs", "2"]
    if resume is not None:
        args += ["--resume", str(resume)]
    return args


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bin", default=os.path.join(HERE, "..", "build", "autotune"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    goals_dir = os.path.join(HERE, "..", "configs", "goals")
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    with tempfile.TemporaryDirectory(prefix="autotune-soak-") as tmp:
        reference, duration = {}, {}
        for mode, name in GOALS:  # uninterrupted runs: the best each resumed run must reach, and how long
            db = os.path.join(tmp, f"reference-{mode}-{name}.db")
            begin = time.time()
            subprocess.run(command(args.bin, mode, os.path.join(goals_dir, name), db), env=env,
                           capture_output=True, check=True, timeout=600)
            duration[(mode, name)] = time.time() - begin
            reference[(mode, name)] = best_of(db, 1)
        kills = lost = integrity_failures = different_best = 0
        started = time.time()
        for round_number in range(1, args.rounds + 1):
            mode, name = rng.choice(GOALS)
            goal = os.path.join(goals_dir, name)
            db = os.path.join(tmp, f"round{round_number}.db")
            run_id = None
            for attempt in range(20):
                proc = subprocess.Popen(command(args.bin, mode, goal, db, run_id), env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                delay = rng.uniform(0.02, 0.9 * duration[(mode, name)])  # a moment inside the run
                try:
                    proc.wait(timeout=delay)
                except subprocess.TimeoutExpired:
                    before = set()
                    try:
                        before = {r[0] for r in query(db, "SELECT id FROM trials")}
                    except sqlite3.Error:
                        pass
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    kills += 1
                    if os.path.exists(db):
                        after = {r[0] for r in query(db, "SELECT id FROM trials")}
                        lost += len(before - after)
                        if query(db, "PRAGMA integrity_check")[0][0] != "ok":
                            integrity_failures += 1
                        rows = query(db, "SELECT id FROM runs ORDER BY id")
                        run_id = rows[0][0] if rows else None
                    continue
                if proc.returncode != 0:
                    print(f"round {round_number}: {mode} {name} exited {proc.returncode}", file=sys.stderr)
                break
            status = query(db, "SELECT status FROM runs WHERE id = 1")
            if not status or status[0][0] != "completed" or best_of(db, 1) != reference[(mode, name)]:
                different_best += 1
                print(f"round {round_number}: {mode} {name}: status {status}, best {best_of(db, 1)} "
                      f"against {reference[(mode, name)]}", file=sys.stderr)
        print(f"soak: {args.rounds} rounds ({', '.join(f'{m} {n}' for m, n in GOALS)}), {kills} kill -9, "
              f"{time.time() - started:.0f} s")
        print(f"  trials lost:                {lost}")
        print(f"  integrity_check failures:   {integrity_failures}")
        print(f"  runs not reaching the uninterrupted best: {different_best} of {args.rounds}")
        return 0 if lost == 0 and integrity_failures == 0 and different_best == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
