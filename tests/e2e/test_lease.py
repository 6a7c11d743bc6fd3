"""One process at a time runs a run: while a run is going, `run --resume` of it from another process is refused
in one line naming the holder, before anything is written; once the holder is dead (killed, or silent past the
stale limit) the run is taken over and completes. Trials never exceed the budget."""
import os
import signal
import sqlite3
import subprocess
import time

from loop_support import BIN, check, query, quickstart_with_analyzer, tempdir

# A profile analyzer that hangs on its first request (the run stays busy) until its autotune is gone, then
# answers normally.
PLUGIN = """#!/usr/bin/env python3
import json, os, sys, time
state = sys.argv[1]
parent = os.getppid()
for line in sys.stdin:
    request = json.loads(line).get("request") or {}
    if not os.path.exists(state):
        open(state, "w").close()
        while os.getppid() == parent:
            time.sleep(0.1)
        sys.exit(0)
    print(json.dumps({"result": request.get("builtin"), "decision": {"action": "no_finding", "rationale": "ok"}}),
          flush=True)
"""

# A profile analyzer that, on its first request, waits until a file appears (the test takes the lease away
# meanwhile), then answers normally.
WAITING_PLUGIN = """#!/usr/bin/env python3
import json, os, sys, time
state, release = sys.argv[1], sys.argv[2]
for line in sys.stdin:
    request = json.loads(line).get("request") or {}
    if not os.path.exists(state):
        open(state, "w").close()
        while not os.path.exists(release):
            time.sleep(0.05)
    print(json.dumps({"result": request.get("builtin"), "decision": {"action": "no_finding", "rationale": "ok"}}),
          flush=True)
"""


def holder_that_lost_its_lease(tmp, env):
    """A holder whose lease another process took over (it was paused past the stale limit, say) writes
    nothing more to the run: its next write stops it with one line, and the run stays as the new holder has
    it."""
    state, release = os.path.join(tmp, "waiting"), os.path.join(tmp, "release")
    goal = quickstart_with_analyzer(tmp, "waiting.yaml", "waiting.py", WAITING_PLUGIN, "waiting", state, release)
    db = os.path.join(tmp, "lost.db")
    holder = subprocess.Popen([BIN, "run", goal, "--db", db], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, env=env)
    deadline = time.time() + 120
    while time.time() < deadline and not os.path.exists(state):
        check(holder.poll() is None, "the run ended before its plugin waited")
        time.sleep(0.05)
    run_id = query(db, "SELECT id FROM runs")[0][0]
    con = sqlite3.connect(db)
    con.execute("UPDATE run_leases SET host = 'elsewhere', pid = 1, heartbeat = ? WHERE run = ?",
                (time.time() + 3600, run_id))
    con.commit()
    con.close()
    decisions = query(db, "SELECT COUNT(*) FROM decisions WHERE run = ?", (run_id,))[0][0]
    trials = query(db, "SELECT COUNT(*) FROM trials WHERE run = ?", (run_id,))[0][0]
    time.sleep(6)  # past a heartbeat, which finds the lease gone
    open(release, "w").close()
    _, stderr = holder.communicate(timeout=120)
    lines = stderr.strip().splitlines()
    check(holder.returncode == 2 and lines and "another autotune process took it over" in lines[-1],
          f"the holder that lost its lease: exit {holder.returncode}, {stderr[-600:]!r}")
    check(query(db, "SELECT COUNT(*) FROM decisions WHERE run = ?", (run_id,))[0][0] == decisions and
          query(db, "SELECT COUNT(*) FROM trials WHERE run = ?", (run_id,))[0][0] == trials,
          "the holder wrote to the run after losing its lease")
    check(query(db, "SELECT status FROM runs WHERE id = ?", (run_id,))[0][0] == "running",
          "the holder that lost its lease changed the run's status")


def main():
    with tempdir() as tmp:
        state = os.path.join(tmp, "hung")
        goal = quickstart_with_analyzer(tmp, "goal.yaml", "plugin.py", PLUGIN, "slow", state)
        db = os.path.join(tmp, "lease.db")
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        holder = subprocess.Popen([BIN, "run", goal, "--db", db], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=env)
        deadline = time.time() + 120
        while time.time() < deadline and not os.path.exists(state):
            check(holder.poll() is None, "the first run ended before its plugin hung")
            time.sleep(0.05)
        run_id = query(db, "SELECT id FROM runs")[0][0]
        decisions_before = query(db, "SELECT COUNT(*) FROM decisions")[0][0]

        def resume():
            return subprocess.run([BIN, "run", goal, "--db", db, "--resume", str(run_id)], capture_output=True,
                                  text=True, timeout=300, env=env)

        proc = resume()
        lines = proc.stderr.strip().splitlines()
        check(proc.returncode == 2 and len(lines) == 1, f"second process: exit {proc.returncode}, {proc.stderr!r}")
        check(f"run {run_id} is being run by another autotune process (pid {holder.pid}" in lines[0],
              f"the refusal does not name the holder: {lines[0]}")
        check(query(db, "SELECT COUNT(*) FROM decisions")[0][0] == decisions_before, "a refused resume wrote")
        # Another host's lease with a fresh heartbeat is honoured too; a silent one is taken over.
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        con = sqlite3.connect(db)
        con.execute("UPDATE run_leases SET host = 'elsewhere', pid = 1, heartbeat = ? WHERE run = ?",
                    (time.time(), run_id))
        con.commit()
        proc = resume()
        check(proc.returncode == 2 and "pid 1 on elsewhere" in proc.stderr, f"fresh foreign lease: {proc.stderr!r}")
        con.execute("UPDATE run_leases SET heartbeat = ? WHERE run = ?", (time.time() - 120, run_id))
        con.commit()
        con.close()
        proc = resume()
        check(proc.returncode == 0, f"taking over a silent lease: exit {proc.returncode}: {proc.stderr[-800:]}")
        status = query(db, "SELECT status FROM runs WHERE id = ?", (run_id,))[0][0]
        check(status == "completed", f"run status {status}")
        check(not query(db, "SELECT * FROM run_leases"), "the lease was not released")
        trials = query(db, "SELECT COUNT(*) FROM trials WHERE run = ?", (run_id,))[0][0]
        check(trials <= 24, f"{trials} trials for a budget of 24")
        # The holder killed with SIGKILL on this host: its lease is taken over at once (its process is gone).
        os.remove(state)
        holder = subprocess.Popen([BIN, "run", goal, "--db", db], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=env)
        while time.time() < deadline + 120 and not os.path.exists(state):
            time.sleep(0.05)
        run_id = query(db, "SELECT max(id) FROM runs")[0][0]
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        proc = resume()
        check(proc.returncode == 0, f"taking over a dead holder's lease: exit {proc.returncode}: {proc.stderr[-800:]}")
        holder_that_lost_its_lease(tmp, env)
    print("ok")


if __name__ == "__main__":
    main()
