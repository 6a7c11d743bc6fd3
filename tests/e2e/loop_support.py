"""Shared helpers of the loop's e2e tests: run the real binary on goals."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

BIN = os.environ.get("AUTOTUNE_BIN", "autotune")
SOURCE = os.environ.get("AUTOTUNE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def goal_path(name):
    return os.path.join(SOURCE, "configs", "goals", name)


def run(args, db, timeout=300, env_extra=None):
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    if env_extra:
        env.update(env_extra)
    return subprocess.run([BIN] + args + ["--db", db], capture_output=True, text=True, timeout=timeout, env=env)


def run_json(args, db, timeout=300):
    proc = run(args + ["--json"], db, timeout)
    if proc.returncode != 0:
        fail(f"{args} exited {proc.returncode}: {proc.stderr[-2000:]}")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        fail(f"{args}: stdout is not one JSON object: {proc.stdout[:500]}")


def interrupt_when(args, db, ready, timeout=120):
    """Runs `autotune ARGS --db DB`, sends SIGINT at the first stderr line for which ready(line) is true
    (every line is passed, in order), and returns (exit status, all of stderr)."""
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    proc = subprocess.Popen([BIN] + args + ["--db", db], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if ready(line):
            proc.send_signal(signal.SIGINT)
            break
    try:
        _, rest = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return proc.returncode, "".join(seen) + rest


def query(db, sql, params=()):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def write_goal(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def quickstart_with_analyzer(directory, goal_name, plugin_file, plugin_text, skill_name, *args):
    """configs/goals/quickstart.yaml with one profile-analyzer plugin after the built-in: writes the plugin's
    script as `plugin_file` and the goal as `goal_name` in `directory`, the script run with python3 and `args`;
    returns the goal's path."""
    plugin = os.path.join(directory, plugin_file)
    with open(plugin, "w") as f:
        f.write(plugin_text)
    with open(goal_path("quickstart.yaml")) as f:
        text = f.read()
    command = ", ".join(json.dumps(part) for part in ("python3", plugin, *args))
    return write_goal(directory, goal_name, text + f"""
skills:
  - {{name: {skill_name}, command: [{command}], role: profile_analyzer, after: profile_analyzer, timeout_s: 600}}
""")


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def wait_until(condition, what, timeout=60):
    """Polls `condition` every 50 ms; fails the test naming `what` after `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    fail(f"timed out waiting for {what}")


def psql(state, database, sql, must=True):
    """`sql` run by psql on `database` of the test cluster described by `state` (postgres_cluster's
    STATE.json), its output stripped; on an error the test fails, or with must=False None is returned
    (a database still getting its schema, a server stopped on purpose)."""
    out = subprocess.run(["psql", state["url"] % database, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         capture_output=True, text=True)
    if out.returncode == 0:
        return out.stdout.strip()
    if must:
        fail(f"psql {sql}: {out.stderr}")
    return None


def one_error_line(proc, *needles):
    """Misuse: exit status 2 and exactly one `autotune: error: ` line holding every needle."""
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode == 2, f"exit {proc.returncode} (2 expected): {proc.stderr}")
    check(len(lines) == 1 and lines[0].startswith("autotune: error: "), f"one error line expected: {proc.stderr!r}")
    for needle in needles:
        check(needle in lines[0], f"{needle!r} not in {lines[0]!r}")


def tempdir():
    return tempfile.TemporaryDirectory(prefix="autotune-e2e-")
