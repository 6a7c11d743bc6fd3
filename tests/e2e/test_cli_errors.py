"""Command-line misuse is one line prefixed `autotune: error:` with exit status 2; a mistyped command
names the nearest one; --help and --version still exit 0."""
import json
import os
import shutil
import sqlite3
import subprocess

from loop_support import BIN, SOURCE, check, one_error_line, query, tempdir, write_goal


def run(*args):
    env = dict(os.environ)
    env.pop("AUTOTUNE_DB", None)
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60, env=env)


def main():
    one_error_line(run("runz"), "unknown command 'runz'", "did you mean 'run'?", "commands:")
    one_error_line(run("modle"), "did you mean 'model'?")
    one_error_line(run("xyzzy"), "unknown command 'xyzzy'")
    proc = run("xyzzy")
    check("did you mean" not in proc.stderr, f"no suggestion for a word far from every command: {proc.stderr}")
    one_error_line(run("run", "--bogus", "x"), "--bogus")
    # The global flag after a command, as before it.
    check(run("kernels", "-v").returncode == 0, "`autotune kernels -v` is refused")
    # A hidden command is not offered among the commands.
    check("kernel-worker" not in run("runz").stderr, f"a hidden command is listed: {run('runz').stderr}")
    # A suite given to `run` says what it is and which command runs it.
    nkibench = os.path.join(SOURCE, "configs", "suites", "nkibench.yaml")
    one_error_line(run("run", nkibench), "nkibench.yaml:", "tasks: this is a suite, not a goal", "autotune suite")
    # A trace that cannot be written is refused before the simulation runs.
    one_error_line(run("profile", "--kernel", "exp", "--trace", "/nonexistent-folder/x.json"),
                   "--trace /nonexistent-folder/x.json: the folder /nonexistent-folder does not exist")
    one_error_line(run(), "subcommand is required")
    # Worker counts are bounded (each is a thread): refused with the accepted range, before any work.
    quickstart = os.path.join(SOURCE, "configs", "goals", "quickstart.yaml")
    with tempdir() as tmp:
        db = os.path.join(tmp, "jobs.db")
        for command in ("run", "sweep"):
            for jobs in ("1000", "0", "-3"):
                one_error_line(run(command, quickstart, "--jobs", jobs, "--db", db), "--jobs", f"{jobs} is out of range",
                               "1 to 256")
        # Past an int's range, the number typed is named with the range (CLI11 said "Could not convert").
        for command, flag, accepted in ((["run", quickstart], "--jobs", "1 to 256"),
                                        (["suite", os.path.join(SOURCE, "configs", "suites", "nkibench.yaml")],
                                         "--jobs", "1 to 256"),
                                        (["model", os.path.join(SOURCE, "configs", "models", "qwen3-0.6b.yaml")],
                                         "--layers", "1 to 1024")):
            one_error_line(run(*command, flag, "99999999999999999999", "--db", db),
                           f"{flag}: 99999999999999999999 is out of range; accepted: {accepted}")
            one_error_line(run(*command, flag, "2.5", "--db", db), f"{flag}: '2.5' is not a whole number")
        goal = write_goal(tmp, "parallel.yaml", open(quickstart).read().replace("parallel: 2", "parallel: 100000"))
        check("parallel: 100000" in open(goal).read(), "quickstart.yaml changed shape")
        one_error_line(run("run", goal, "--db", db), "parallel", "1 to 256")
        check(not os.path.exists(db) or not query(db, "SELECT id FROM runs"), "a refused run must not start")
        # An empty value is not the default: leaving the flag out is.
        one_error_line(run("profile", "--kernel", "exp", "--dtype", ""), "--dtype: an empty value")
        # An id is a whole number: an empty word is not 0, nor a huge one the largest id.
        one_error_line(run("trials", "", "--db", db), "RUN: '' is not an id")
        one_error_line(run("explain", "1", "99999999999999999999", "--db", db), "TRIAL: 99999999999999999999 is out of range")
        # A run to resume is looked for in a database that exists; a mistyped --db is not created.
        missing_db = os.path.join(tmp, "mistyped.db")
        one_error_line(run("run", quickstart, "--resume", "3", "--db", missing_db),
                       f"database {missing_db} does not exist")
        check(not os.path.exists(missing_db), "--resume created the database it did not find")
        # Counts that cannot be negative are refused as such, not read as huge numbers.
        for value, needle in (("-5", "'-5' is not a non-negative integer"), ("0", "--limit must be at least 1")):
            one_error_line(run("sweep", quickstart, "--limit", value, "--db", db), needle)
        space = os.path.join(SOURCE, "..", "shared", "data", "tuning", "pnpoly", "RTX_3090.json")
        for flag in ("--batch", "--transfer"):
            one_error_line(run("search-bench", space, "--strategy", "random", "--budget", "2", flag, "-1"),
                           f"{flag}: '-1' is not a non-negative integer")
        check(not os.path.exists(db) or not query(db, "SELECT id FROM runs"), "a refused sweep must not start")
        # A worker's flags are checked before it opens the database or says it is measuring.
        worker_db = os.path.join(tmp, "worker.db")
        for flags, needle in ((["--jobs", "0"], "--jobs: 0 is out of range; accepted: 1 to 256"), (["--lease", "inf"], "--lease inf"),
                              (["--lease", "2"], "accepted: 5 to 10000000 seconds"), (["--lease", "1e300"], "--lease 1e+300"),
                              (["--idle-exit", "-1"], "--idle-exit must be a number of seconds, 0 or more"),
                              (["--idle-exit", "abc"], "--idle-exit: 'abc' is not a number (see --help)"),
                              (["--lease", "1.5s"], "--lease: '1.5s' is not a number")):
            idle_exit = [] if "--idle-exit" in flags else ["--idle-exit", "1"]
            one_error_line(run("worker", "--db", worker_db, *idle_exit, *flags), needle)
        # With good flags on an SQLite file it says workers need PostgreSQL, where it waited for work that never comes.
        one_error_line(run("worker", "--db", worker_db), f"worker --db {worker_db}: workers share the runs of a "
                       "PostgreSQL database")
        check(not os.path.exists(worker_db), "a refused worker must not create its database")
    # profile's --timeout bounds a kernel source's worker: checked before anything is compiled.
    for value, shown in (("0", "0"), ("-1", "-1"), ("nan", "nan"), ("1e300", "1e+300")):
        one_error_line(run("profile", "--kernel-source", "never_compiled.cc", "--timeout", value),
                       f"--timeout {shown}: expected a positive number of seconds, at most 10000000")
    one_error_line(run("profile", "--kernel", "exp", "--timeout", "5"), "--timeout is for --kernel-source")
    # A database autotune did not write: one line and exit 2, no SQL; a reading command writes nothing.
    with tempdir() as tmp:
        empty = os.path.join(tmp, "empty.db")
        open(empty, "w").close()
        for command in (["runs"], ["trials", "1"], ["report", "1", "-o", os.path.join(tmp, "r.html")]):
            one_error_line(run(*command, "--db", empty), "empty.db is not an autotune database", "it is empty")
            check(os.path.getsize(empty) == 0 and sorted(os.listdir(tmp)) == ["empty.db"],
                  f"{command[0]} wrote into an empty file: {os.listdir(tmp)} {os.path.getsize(empty)} bytes")
        write_goal(tmp, "measure.py", 'print(\'{"latency_s": 0.001}\')\n')
        goal = write_goal(tmp, "one.yaml", "name: one\ntarget: {kind: command, argv: [python3, measure.py, '{x}']}\n"
                                           "search:\n  space: {x: [1]}\n")
        good = os.path.join(tmp, "good.db")
        proc = run("sweep", goal, "--db", good)
        check(proc.returncode == 0, proc.stderr)
        # A run given twice would be drawn twice, with clashing element ids.
        one_error_line(run("report", "1", "1", "--db", good, "-o", os.path.join(tmp, "r.html")),
                       "run 1 is given twice")
        for name, change, needle in (
                ("negative.db", ["PRAGMA user_version = -5"], "schema version -5, which no autotune writes"),
                ("column.db", [f"DROP VIEW {v}" for (v,) in query(good, "SELECT name FROM sqlite_master WHERE type = 'view'")]
                 + ["ALTER TABLE trials DROP COLUMN error"], "does not have the tables autotune writes (no such column")):
            db = os.path.join(tmp, name)
            shutil.copy(good, db)
            con = sqlite3.connect(db)
            for sql in change:
                con.execute(sql)
            con.commit()
            con.close()
            for command in (["runs"], ["trials", "1"]):
                proc = run(*command, "--db", db)
                one_error_line(proc, needle)
                check("SELECT" not in proc.stderr, proc.stderr)
    # A number beyond a double's range is bad input like any other, not an internal error.
    with tempdir() as tmp:
        cachefile = os.path.join(tmp, "cache.json")
        with open(cachefile, "w") as f:
            f.write('{"tune_params_keys": ["a"], "tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 1, "time": 1.0}, '
                    '"2": {"a": 2, "time": 2.0}}}')
        one_error_line(run("search-bench", cachefile, "--strategy", "random", "--budget", "2", "--repeats", "1", "--options", '{"xi": 1e999}'), "--options", "is not JSON")
        with open(cachefile, "w") as f:
            f.write('{"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": {"1": {"a": 1, "time": 1e999}}}')
        one_error_line(run("search-bench", cachefile, "--strategy", "random", "--budget", "2", "--repeats", "1"), "cache.json", "invalid JSON")
        goal = write_goal(tmp, "replay.yaml", f"""name: overflow
target: {{kind: replay, cachefile: {cachefile}}}
objective: latency
goal: {{improvement: 0.5}}
max_iterations: 1
""")
        proc = run("run", goal, "--db", os.path.join(tmp, "r.db"))
        one_error_line(proc, "cache.json", "JSON")
        # Repeats are held in memory and seeds are consecutive: both are bounded up front.
        with open(cachefile, "w") as f:
            f.write('{"tune_params_keys": ["a"], "tune_params": {"a": [1, 2]}, "cache": {"1": {"a": 1, "time": 1.0}, '
                    '"2": {"a": 2, "time": 2.0}}}')
        one_error_line(run("search-bench", cachefile, "--strategy", "random", "--budget", "2", "--repeats", "2000000000"),
                       "--repeats: 2000000000 is out of range", "1 to 100000")
        one_error_line(run("search-bench", cachefile, "--strategy", "random", "--budget", "2", "--repeats", "2",
                           "--seed", "18446744073709551615"), "--seed", "largest seed")
    # A sweep lists every configuration before measuring: a space too large to list is refused up front.
    with tempdir() as tmp:
        goal = write_goal(tmp, "big.yaml", """name: big
kernel: {family: mykernel}
target: {kind: command, argv: [python3, bench.py, "{a}"]}
search:
  space: {a: {range: [1, 4000]}, b: {range: [1, 4000]}, c: {range: [1, 4000]}}
""")
        db = os.path.join(tmp, "big.db")
        one_error_line(run("sweep", goal, "--db", db), "64000000000 configurations", "--limit N")
        one_error_line(run("sweep", goal, "--limit", "2000000", "--db", db), "--limit 2000000", "at most 1000000")
        check(not os.path.exists(db) or not query(db, "SELECT id FROM runs"), "a refused sweep must not start")
    # Seeds are unsigned 64-bit: a larger or negative one is refused, not saturated.
    with tempdir() as tmp:
        db = os.path.join(tmp, "seed.db")
        one_error_line(run("run", quickstart, "--seed", "18446744073709551616", "--db", db), "--seed", "out of range")
        one_error_line(run("run", quickstart, "--seed", "-1", "--db", db), "--seed", "not a non-negative integer")
    # search-bench runs without --repeats (10 seeds by default).
    proc = run("search-bench", os.path.join(SOURCE, "..", "shared", "data", "tuning", "convolution", "RTX_3090.json"),
               "--strategy", "random", "--budget", "5")
    check(proc.returncode == 0, f"search-bench without --repeats: {proc.returncode} {proc.stderr[-300:]}")
    # Names that look like numbers: quoted, or declared categorical, they stay names.
    with tempdir() as tmp:
        bench = os.path.join(tmp, "bench.py")
        with open(bench, "w") as f:
            f.write('import json, sys\nprint(json.dumps({"latency_s": 1.0 if sys.argv[1] == "fast" else 2.0}))\n')
        for domain in ('["1", "fast"]', '{categorical: [1, fast]}'):
            goal = write_goal(tmp, "names.yaml", f"""name: names
kernel: {{family: mykernel}}
target: {{kind: command, argv: [python3, {bench}, "{{a}}"]}}
max_iterations: 1
search:
  space: {{a: {domain}}}
""")
            db = os.path.join(tmp, "names.db")
            proc = run("run", goal, "--db", db)
            check(proc.returncode == 0, f"{domain}: exit {proc.returncode}: {proc.stderr[-500:]}")
            values = {json.loads(p)["a"] for (p,) in query(db, "SELECT params FROM trials")}
            check(values <= {"1", "fast"} and values, f"{domain}: values {values}")
            os.remove(db)
    for args in (["--help"], ["run", "--help"], ["--version"]):
        proc = run(*args)
        check(proc.returncode == 0 and proc.stdout, f"{args}: exit {proc.returncode}")
    print("ok")


if __name__ == "__main__":
    main()
