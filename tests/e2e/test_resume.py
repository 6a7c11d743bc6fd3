"""kill -9 a run mid-way, --resume it, and reach the same best as an uninterrupted run with the same seed,
without measuring committed trials again."""
import os
import random
import signal
import sqlite3
import subprocess
import time

from loop_support import BIN, check, query, run_json, tempdir, write_goal

GOAL = """
name: resume-test
kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}
objective: latency
goal: {improvement: 0.9}
max_iterations: 4
budget: {evaluations: 16}
search: {strategy: bayes, batch_size: 2}
start: {variant: tiled}
parallel: 1
seed: 7
"""


def main():
    with tempdir() as tmp:
        goal = write_goal(tmp, "goal.yaml", GOAL)
        reference_db = os.path.join(tmp, "reference.db")
        reference = run_json(["run", goal, "--no-cache"], reference_db)

        db = os.path.join(tmp, "killed.db")
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        proc = subprocess.Popen([BIN, "run", goal, "--db", db, "--no-cache"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env)
        # Kill at a random moment: after a random number of committed trials (at least one, so the run
        # exists) plus a random delay, which may fall inside a batch or a commit. The seed is printed to
        # replay a failure (AUTOTUNE_KILL_SEED).
        kill_seed = int(os.environ.get("AUTOTUNE_KILL_SEED", random.SystemRandom().randrange(1 << 30)))
        chooser = random.Random(kill_seed)
        kill_after = chooser.randint(1, max(1, reference["evaluations"] - 1))
        delay = chooser.uniform(0, 0.05)
        print(f"kill seed {kill_seed}: after {kill_after} trials + {delay * 1000:.0f} ms")
        deadline = time.time() + 120
        killed_at = 0
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
            try:
                killed_at = query(db, "SELECT COUNT(*) FROM trials")[0][0]
            except Exception:
                continue
            if killed_at >= kill_after:
                time.sleep(delay)
                break
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        run_id = query(db, "SELECT id FROM runs")[0][0]
        committed = query(db, "SELECT COUNT(*) FROM trials WHERE run = ?", (run_id,))[0][0]
        print(f"killed with {committed} trials committed (reference run: {reference['evaluations']})")

        resumed = run_json(["run", goal, "--resume", str(run_id), "--no-cache"], db)
        check(resumed["run_id"] == run_id, "resume created another run")
        check(resumed["status"] == "completed", f"resumed run: {resumed['status']} {resumed['stop_reason']}")
        check(resumed["resumed_trials"] == committed,
              f"{committed} committed trials, but {resumed['resumed_trials']} served from them")
        check(resumed["measured"] == resumed["evaluations"] - committed, "committed trials were measured again")
        check(resumed["best"]["variant"] == reference["best"]["variant"] and
              resumed["best"]["params"] == reference["best"]["params"],
              f"resumed best {resumed['best']} differs from the uninterrupted {reference['best']}")
        check(resumed["evaluations"] == reference["evaluations"], "a different number of evaluations after resume")
        hashes = query(db, "SELECT config_hash, COUNT(*) FROM trials WHERE run = ? GROUP BY config_hash HAVING COUNT(*) > 1",
                       (run_id,))
        check(not hashes, f"trials measured twice: {hashes}")
        seqs = [r[0] for r in query(db, "SELECT seq FROM decisions WHERE run = ? ORDER BY seq", (run_id,))]
        check(seqs == list(range(1, len(seqs) + 1)), "decision sequence has gaps or repeats")

        # A run measured by another simulator is not resumed by this build: its trials would mix.
        con = sqlite3.connect(db)
        con.execute("UPDATE runs SET simulator_version = 'sim-0.9' WHERE id = ?", (run_id,))
        con.commit()
        con.close()
        trials_before = query(db, "SELECT COUNT(*) FROM trials")[0][0]
        proc = subprocess.run([BIN, "run", goal, "--resume", str(run_id), "--db", db], capture_output=True,
                              text=True, env=env, timeout=120)
        check(proc.returncode == 2 and "the run was measured with sim-0.9, this build is" in proc.stderr,
              f"a run of another simulator was resumed: {proc.returncode} {proc.stderr[-300:]}")
        check(query(db, "SELECT COUNT(*) FROM trials")[0][0] == trials_before, "the refused resume wrote trials")

        # Ctrl-C says how to resume the run, and exits 130.
        interrupted_db = os.path.join(tmp, "interrupted.db")
        proc = subprocess.Popen([BIN, "run", goal, "--db", interrupted_db, "--no-cache"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.02)
            try:
                if query(interrupted_db, "SELECT COUNT(*) FROM trials")[0][0] >= 1:
                    break
            except Exception:
                continue
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        interrupted = query(interrupted_db, "SELECT id FROM runs")[0][0]
        if proc.returncode == 130:
            check(f"--resume {interrupted} --db {interrupted_db}" in stderr, f"no resume hint: {stderr[-500:]}")
        else:
            check(proc.returncode == 0, f"the run neither finished nor was interrupted: {proc.returncode}")
    print("ok")


if __name__ == "__main__":
    main()
