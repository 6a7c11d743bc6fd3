"""SIGTERM or SIGINT while a run waits on a plugin: every process autotune started dies (the plugin, and a
helper the plugin moved to a session of its own), the run is recorded as interrupted with exit status 130 and
a resume hint, and --resume completes it. A normal exit leaves no helper behind either. SIGTERM sent to the
process and at once to its process group, as timeout(1) sends it, is one interruption, recorded the same."""
import json
import os
import signal
import subprocess
import time

from loop_support import BIN, check, goal_path, query, tempdir, write_goal

# A profile analyzer that starts a helper in a new session (setsid), records both pids, then, the first time
# only, hangs on its first request; afterwards it answers with the built-in analysis.
PLUGIN = """#!/usr/bin/env python3
import json, os, subprocess, sys, time
state = sys.argv[1]
helper = subprocess.Popen(["sleep", "600"], start_new_session=True)
first_time = not os.path.exists(state + ".hung")
with open(state + ".pids", "a") as f:
    f.write(f"{os.getpid()} {helper.pid}\\n")
for line in sys.stdin:
    request = json.loads(line).get("request") or {}
    if first_time:
        open(state + ".hung", "w").close()
        time.sleep(600)
    print(json.dumps({"result": request.get("builtin"), "decision": {"action": "no_finding", "rationale": "ok"}}),
          flush=True)
"""


def alive(pid):
    """Running, not a zombie waiting for a parent that does not reap."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def pending(pid, sent):
    """Whether signal `sent` to process `pid` waits to be taken."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("ShdPnd:"):
                return (int(line.split()[1], 16) >> (sent - 1)) & 1 == 1
    return False


def pids(state):
    with open(state + ".pids") as f:
        return [int(p) for line in f for p in line.split()]


def main():
    with tempdir() as tmp:
        plugin = os.path.join(tmp, "plugin.py")
        with open(plugin, "w") as f:
            f.write(PLUGIN)
        state = os.path.join(tmp, "state")
        with open(goal_path("quickstart.yaml")) as f:
            text = f.read()
        goal = write_goal(tmp, "goal.yaml", text + f"""
skills:
  - {{name: stuck, command: [python3, {json.dumps(plugin)}, {json.dumps(state)}], role: profile_analyzer,
     after: profile_analyzer, timeout_s: 600}}
""")
        env = dict(os.environ)
        env.pop("AUTOTUNE_DB", None)
        # The repeated signal lands while autotune handles the first only in most tries: three of them.
        for number, (sent, to_group) in enumerate(((signal.SIGTERM, False), (signal.SIGINT, False)) +
                                                  ((signal.SIGTERM, True),) * 3):
            for suffix in (".pids", ".hung"):
                if os.path.exists(state + suffix):
                    os.remove(state + suffix)
            db = os.path.join(tmp, f"run{number}.db")
            proc = subprocess.Popen([BIN, "run", goal, "--db", db], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True, env=env, start_new_session=to_group)
            deadline = time.time() + 120
            while time.time() < deadline and not os.path.exists(state + ".hung"):
                if proc.poll() is not None:
                    check(False, f"the run ended before the plugin hung: {proc.stderr.read()[-800:]}")
                time.sleep(0.05)
            check(os.path.exists(state + ".hung"), "the plugin never received a request")
            started = pids(state)
            check(all(alive(p) for p in started), "the plugin or its helper is not running")
            sent_at = time.time()
            proc.send_signal(sent)
            if to_group:
                # Again once the first is taken, while autotune is still handling it (timeout(1) does
                # not wait: the two would otherwise merge into one pending signal).
                while pending(proc.pid, sent):
                    pass
                os.killpg(proc.pid, sent)
            _, stderr = proc.communicate(timeout=30)
            check(proc.returncode == 130, f"{sent.name}: exit {proc.returncode}: {stderr[-800:]}")
            check(time.time() - sent_at < 10, f"{sent.name}: exiting took {time.time() - sent_at:.1f} s")
            time.sleep(0.2)
            check(not any(alive(p) for p in started), f"{sent.name}: processes outlived autotune: {started}")
            run_id, status, reason = query(db, "SELECT id, status, stop_reason FROM runs")[0]
            check(status == "interrupted" and sent.name in reason, f"{sent.name}: run status {status} ({reason})")
            check(f"--resume {run_id} --db {db}" in stderr, f"no resume hint: {stderr[-500:]}")
            # Resumed, the plugin answers and the run completes; its helper is gone when autotune exits.
            proc = subprocess.run([BIN, "run", goal, "--db", db, "--resume", str(run_id)], capture_output=True,
                                  text=True, timeout=300, env=env)
            check(proc.returncode == 0, f"resume exited {proc.returncode}: {proc.stderr[-800:]}")
            status = query(db, "SELECT status FROM runs WHERE id = ?", (run_id,))[0][0]
            check(status == "completed", f"resumed run: {status}")
            time.sleep(0.2)
            leftover = [p for p in pids(state) if alive(p)]
            check(not leftover, f"processes outlived a completed run: {leftover}")
    print("ok")


if __name__ == "__main__":
    main()
