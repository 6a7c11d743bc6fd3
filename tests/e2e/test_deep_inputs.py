"""Inputs deep enough to crash a reader, end to end.

A goal holding a recursive YAML alias (`a: &a [*a]`, here under `skills:` and at the top) and one
whose aliases expand to ten billion values ("billion laughs") must each get one error line, exit 2,
within seconds and without a run; so must a model file holding the alias. A command target that
prints a JSON object nested 100,000 levels deep must give a failed trial with its reason, and the run
must complete (not crash, not be left `running`). A goal stored with a run and changed in the database to
hold the alias or the laughs must give `report` and `export` one error line and exit 2, and `model` one
warning line (the run's trials are passed over) and its table."""
import json
import os
import subprocess
import sys
import time

from loop_support import BIN, check, query, run, tempdir, write_goal

GOOD = """name: deep
kernel: {family: gemm, shape: {M: 256, N: 256, K: 256}, dtype: bf16}
objective: latency
goal: {improvement: 0.95}
max_iterations: 1
budget: {evaluations: 2}
"""

LAUGHS = "lol0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10))

DEEP_PROGRAM = "import sys; sys.stdout.write('{\"latency_s\": ' + '[' * 100000 + ']' * 100000 + '}\\n')"


def refused(proc, name, *needles):
    err = proc.stderr.strip()
    check(proc.returncode == 2, f"{name}: exit {proc.returncode} (2 expected): {err[-1000:]!r}")
    check(err.startswith("autotune: error: ") and "\n" not in err, f"{name}: not one error line: {err[-1000:]!r}")
    for needle in needles:
        check(needle in err, f"{name}: {needle!r} not in {err!r}")


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        cases = {
            "alias_skills.yaml": (GOOD + "skills: &s {inner: *s}\n", "recursive alias"),
            "alias_top.yaml": (GOOD + "a: &a [*a]\n", "recursive alias"),
            "laughs.yaml": (GOOD + LAUGHS, "once its aliases are expanded"),
        }
        for name, (text, needle) in cases.items():
            goal = write_goal(tmp, name, text)
            for command in ("run", "sweep"):
                started = time.monotonic()
                proc = run([command, goal], db, timeout=60)
                refused(proc, f"{command} {name}", name, needle)
                check(time.monotonic() - started < 20, f"{command} {name}: took {time.monotonic() - started:.0f} s")
        model = write_goal(tmp, "model.yaml", "name: m\nlayers: &l [*l]\n")
        proc = subprocess.run([BIN, "model", model, "--db", db], capture_output=True, text=True, timeout=60)
        refused(proc, "model file", "model.yaml", "recursive alias")
        if os.path.exists(db):
            check(query(db, "SELECT COUNT(*) FROM runs")[0][0] == 0, "a refused goal started a run")

        check_stored_goals(tmp)

        # A command target whose output nests 100,000 levels deep: a failed trial, a completed run.
        program = write_goal(tmp, "deep.py", DEEP_PROGRAM + "\n")
        goal = write_goal(tmp, "deep_json.yaml", f"""name: deep-json
target: {{kind: command, argv: [{json.dumps(sys.executable)}, {json.dumps(program)}, "{{a}}"]}}
search: {{strategy: grid, space: {{a: [1, 2]}}}}
budget: {{evaluations: 2}}
goal: {{improvement: 0.95}}
""")
        proc = run(["run", goal, "--json"], db, timeout=120)
        check(proc.returncode in (0, 1) and proc.stdout.strip().startswith("{"),
              f"deep JSON: exit {proc.returncode}: {proc.stderr[-2000:]!r}")
        summary = json.loads(proc.stdout)
        status = query(db, "SELECT status FROM runs WHERE id = ?", (summary["run_id"],))[0][0]
        check(status != "running", "deep JSON: the run was left running")
        trials = query(db, "SELECT status, error FROM trials WHERE run = ?", (summary["run_id"],))
        check(trials and all(t[0] == "failed" for t in trials), f"deep JSON: trials {trials}")
        check(all("nested deeper than 256 levels" in t[1] for t in trials), f"deep JSON: reasons {trials}")
    print("OK")


def check_stored_goals(tmp):
    """The readers of goals stored with runs (report, export, model) are bounded like the goal reader."""
    db = os.path.join(tmp, "stored.db")
    good = write_goal(tmp, "good.yaml", GOOD)
    proc = run(["run", good, "--json"], db, timeout=120)
    check(proc.returncode in (0, 1), f"good run: exit {proc.returncode}: {proc.stderr[-2000:]!r}")
    run_id = json.loads(proc.stdout)["run_id"]
    stored = query(db, "SELECT goal_yaml FROM runs WHERE id = ?", (run_id,))[0][0]
    model = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "models", "qwen3-0.6b.yaml")
    where = f"run {run_id}'s stored goal"
    for poison, needle in (("a: &a [*a]\n", "recursive alias"), (LAUGHS, "once its aliases are expanded")):
        changed = sql_text(stored.rstrip("\n") + "\n" + poison)
        subprocess.run(["sqlite3", db, f"UPDATE runs SET goal_yaml = {changed} WHERE id = {run_id}"], check=True)
        for command in (["report", str(run_id), "-o", os.path.join(tmp, "r.html")], ["export", str(run_id)]):
            started = time.monotonic()
            proc = subprocess.run([BIN, *command, "--db", db], capture_output=True, text=True, timeout=60)
            refused(proc, f"{command[0]} of a stored goal with {needle}", where, needle)
            check(time.monotonic() - started < 20, f"{command[0]}: took {time.monotonic() - started:.0f} s")
        proc = subprocess.run([BIN, "model", model, "--layers", "1", "--seq", "384", "--target", "trn2", "--db", db,
                               "--json"], capture_output=True, text=True, timeout=120)
        check(proc.returncode == 0, f"model over a stored goal with {needle}: exit {proc.returncode}: "
                                    f"{proc.stderr[-1000:]!r}")
        warnings = [line for line in proc.stderr.splitlines() if where in line]
        check(len(warnings) >= 1 and all(needle in line for line in warnings),
              f"model: no warning naming {where!r} and {needle!r}: {proc.stderr[-1000:]!r}")


def sql_text(text):
    return "'" + text.replace("'", "''") + "'"


if __name__ == "__main__":
    main()
