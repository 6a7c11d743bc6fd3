"""`autotune export RUN --cachefile`: a sweep's space as a Kernel Tuner cachefile, which search-bench and
replay targets take. Every trial is one record under its key; a measured one holds its latency in ms as
"time", one that did not fit the target a failure string; one variant per cachefile. Command and replay
runs export too; a trial the wall-time budget stopped is left out; a run with no measured trial is refused."""
import json
import os
import stat
import subprocess

from loop_support import BIN, check, one_error_line, query, run, run_json, tempdir, write_goal

GOAL = """name: space-exp
kernel: {family: exp, shape: {rows: 250, cols: 512}, dtype: fp32}
target: trn1
objective: latency
start: {variant: tiled}
variants: [tiled]
"""


# A stand-in device program: x=4 never prints (the budget stops it), x=5 crashes; x=9 (the "broken"
# goal) always fails. Its latency depends on x, its score (the "score" objective) the other way round.
PROGRAM = """#!/usr/bin/env python3
import json, sys, time
x = int(sys.argv[1])
if x == 4:
    time.sleep(60)
if x in (5, 9):
    sys.exit("x=%d does not run" % x)
print(json.dumps({"latency_s": 1e-3 * (1 + (x - 2) ** 2), "score": 10.0 - x}))
"""

COMMAND_GOAL = """name: device
target: {kind: command, argv: [./device.py, "{x}", "{mode}"], repeats: 2, timeout_s: 120}
search:
  strategy: grid
  space: {x: [1, 2, 3, 5], mode: [fast, "1"]}
budget: {evaluations: 8}
goal: {improvement: 0.99}
max_iterations: 2
"""


def search_bench(cachefile, tmp):
    """search-bench on the file with a random strategy: the values it found, as it names the space."""
    traces = os.path.join(tmp, "traces.json")
    bench = subprocess.run([BIN, "search-bench", cachefile, "--strategy", "random", "--budget", "3", "--repeats", "1",
                            "--json", traces], capture_output=True, text=True, timeout=300)
    check(bench.returncode == 0, f"search-bench on {cachefile}: {bench.stderr}")
    return json.load(open(traces))


def command_and_replay(tmp, db):
    program = os.path.join(tmp, "device.py")
    with open(program, "w") as f:
        f.write(PROGRAM)
    os.chmod(program, os.stat(program).st_mode | stat.S_IXUSR)

    # A command run round trip: its trials hold names, typed values ("1" stays a name) and times.
    command = run_json(["run", write_goal(tmp, "device.yaml", COMMAND_GOAL)], db, timeout=600)
    out = os.path.join(tmp, "device.json")
    exported = run(["export", str(command["run_id"]), "--cachefile", "-o", out], db)
    check(exported.returncode == 0, f"export --cachefile of a command run: {exported.stderr}")
    document = json.load(open(out))
    check(document["tune_params_keys"] == ["x", "mode"] and document["tune_params"]["mode"] == ["fast", "1"],
          f"the goal's space, typed as measured: {document['tune_params']}")
    trials = query(db, "SELECT params, status, json_extract(metrics, '$.latency_s') FROM trials WHERE run = ?",
                   (command["run_id"],))
    for params, status, latency in trials:
        values = json.loads(params)
        record = document["cache"][f"{values['x']},{values['mode']}"]
        if status == "ok":
            check(abs(record["time"] - latency * 1e3) < 1e-9 and len(record["times"]) == 2, f"record {record}")
        else:
            check(record["time"] == "RuntimeFailedConfig", f"x=5 crashes: {record}")
    search_bench(out, tmp)

    # A replay of that file, exported again: the recorded values as recorded.
    replay_goal = write_goal(tmp, "replay.yaml", f"name: replayed\ntarget: {{kind: replay, cachefile: {out}}}\n"
                                                  "search: {strategy: grid}\nbudget: {evaluations: 8}\n"
                                                  "goal: {improvement: 0.99}\nmax_iterations: 2\n")
    replay = run_json(["run", replay_goal], db, timeout=600)
    again = os.path.join(tmp, "again.json")
    exported = run(["export", str(replay["run_id"]), "--cachefile", "-o", again], db)
    check(exported.returncode == 0, f"export --cachefile of a replay run: {exported.stderr}")
    replayed = json.load(open(again))
    check(replayed["tune_params_keys"] == ["x", "mode"], f"replayed keys: {replayed['tune_params_keys']}")
    for key, record in replayed["cache"].items():
        check(record["time"] == document["cache"][key]["time"], f"{key}: {record} against {document['cache'][key]}")
    search_bench(again, tmp)

    # Another objective: the records hold it under its own name, which the file names.
    scored = write_goal(tmp, "scored.yaml", COMMAND_GOAL.replace("repeats: 2", "repeats: 2, objective: score"))
    score_run = run_json(["run", scored], db, timeout=600)
    out = os.path.join(tmp, "scored.json")
    check(run(["export", str(score_run["run_id"]), "--cachefile", "-o", out], db).returncode == 0, "scored export")
    document = json.load(open(out))
    check(document["objective"] == "score", f"objective: {document['objective']}")
    check(document["cache"]["1,fast"]["score"] == 9.0 and document["cache"]["5,fast"]["score"] == "RuntimeFailedConfig",
          f"score records: {document['cache']}")
    search_bench(out, tmp)

    # The wall-time budget stops x=4's measurement: never fully measured, so left out, and the summary says so.
    budget_goal = COMMAND_GOAL.replace("[1, 2, 3, 5]", "[1, 4]").replace("mode: [fast, \"1\"]", "mode: [fast]")
    budget_goal = budget_goal.replace("evaluations: 8}", "evaluations: 8, wall_time_s: 3}")
    cut = run(["run", write_goal(tmp, "budget.yaml", budget_goal)], db, timeout=120)
    cut_id = query(db, "SELECT max(id) FROM runs")[0][0]
    statuses = dict(query(db, "SELECT json_extract(params, '$.x'), status || ': ' || error FROM trials WHERE run = ?",
                          (cut_id,)))
    check(statuses.get(4, "").startswith("timeout: the run's wall-time budget ran out"),
          f"x=4 not stopped by the budget: {statuses} ({cut.stderr})")
    out = os.path.join(tmp, "budget.json")
    exported = run(["export", str(cut_id), "--cachefile", "-o", out], db)
    check(exported.returncode == 0, f"export of a budget-cut run: {exported.stderr}")
    check("1 left out, stopped by the run's wall-time budget" in exported.stdout, f"summary: {exported.stdout!r}")
    check(list(json.load(open(out))["cache"]) == ["1,fast"], f"cache: {json.load(open(out))['cache']}")

    # Every trial failed: no cachefile, one line.
    broken = COMMAND_GOAL.replace("[1, 2, 3, 5]", "[9]")
    run(["run", write_goal(tmp, "broken.yaml", broken)], db, timeout=600)  # stops at its failed baseline
    failed = query(db, "SELECT max(id) FROM runs")[0][0]
    out = os.path.join(tmp, "broken.json")
    one_error_line(run(["export", str(failed), "--cachefile", "-o", out], db),
                   f"run {failed} has no measured trial", "every configuration failed")
    check(not os.path.exists(out), "a refused export wrote its file")


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "sweeps.db")
        goal = write_goal(tmp, "space.yaml", GOAL)
        sweep = run_json(["sweep", goal, "--jobs", "2", "--limit", "40"], db, timeout=600)
        run_id, count = sweep["run_id"], sweep["configurations"]  # the first 40, less those ruled out
        out = os.path.join(tmp, "space.json")
        exported = run(["export", str(run_id), "--cachefile", "-o", out], db)
        check(exported.returncode == 0, f"export --cachefile: {exported.stderr}")
        document = json.load(open(out))
        keys = document["tune_params_keys"]
        check(keys == ["tile_size", "pipeline_depth", "unroll_factor"], f"the variant's parameters in order: {keys}")
        check(document["objective"] == "time" and document["problem_size"] == [250, 512], f"header: {document}")
        trials = query(db, "SELECT params, status, json_extract(metrics, '$.latency_s') FROM trials WHERE run = ?",
                       (run_id,))
        check(len(document["cache"]) == len(trials) == count > 20, f"one record per trial: {len(document['cache'])}")
        failures = 0
        for params, status, latency in trials:
            values = json.loads(params)
            record = document["cache"][",".join(str(values[k]) for k in keys)]
            if status == "ok":
                check(abs(record["time"] - latency * 1e3) < 1e-9, f"latency in ms: {record} against {latency}")
            else:
                failures += 1
                check(record["time"] in ("CompilationFailedConfig", "RuntimeFailedConfig"), f"a failure: {record}")
        # search-bench replays it: the best value it finds is the sweep's best.
        traces = os.path.join(tmp, "traces.json")
        bench = subprocess.run([BIN, "search-bench", out, "--strategy", "grid", "--budget", str(count), "--repeats", "1",
                                "--json", traces], capture_output=True, text=True, timeout=300)
        check(bench.returncode == 0, f"search-bench on the export: {bench.stderr}")
        values = [v for v in json.load(open(traces))[f"{tmp.split(os.sep)[-1]}/space"][0] if v is not None]
        best = min(r["time"] for r in document["cache"].values() if isinstance(r["time"], float))
        check(len(values) == count - failures and abs(min(values) - best) < 1e-12, f"replayed: {len(values)}")
        # Misuse: one line each.
        one_error_line(run(["export", str(run_id), "1", "--cachefile"], db), "every trial", "without TRIAL")
        one_error_line(run(["export", "--cachefile", "--kernel", "exp"], db), "--cachefile", "RUN")
        # A configuration's flags are no filter of a run's export: refused, not ignored.
        one_error_line(run(["export", str(run_id), "--cachefile", "--variant", "tiled", "--param", "tile_size=64"], db),
                       "--cachefile", "does not take --variant, --param")
        for flag in (["--shape", "rows=8,cols=8"], ["--dtype", "bf16"], ["--target", "trn2"], ["--nki-version", "0.6"]):
            one_error_line(run(["export", str(run_id), "--cachefile"] + flag, db), f"does not take {flag[0]}")
        command_and_replay(tmp, db)
        both = write_goal(tmp, "both.yaml", GOAL.replace("variants: [tiled]\n", "variants: [naive, tiled]\n"))
        mixed = run_json(["sweep", both, "--jobs", "2"], db, timeout=600)
        one_error_line(run(["export", str(mixed["run_id"]), "--cachefile"], db), "one variant", "variants: [V]")
    print("ok")


if __name__ == "__main__":
    main()
