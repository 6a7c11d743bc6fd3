"""Shared helpers of the loop's e2e tests: run the real binary on goals."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

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


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def one_error_line(proc, *needles):
    """Misuse: exit status 2 and exactly one `autotune: error: ` line holding every needle."""
    lines = proc.stderr.strip().splitlines()
    check(proc.returncode == 2, f"exit {proc.returncode} (2 expected): {proc.stderr}")
    check(len(lines) == 1 and lines[0].startswith("autotune: error: "), f"one error line expected: {proc.stderr!r}")
    for needle in needles:
        check(needle in lines[0], f"{needle!r} not in {lines[0]!r}")


def tempdir():
    return tempfile.TemporaryDirectory(prefix="autotune-e2e-")
