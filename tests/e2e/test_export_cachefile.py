"""`autotune export RUN --cachefile`: a sweep's space as a Kernel Tuner cachefile, which search-bench and
replay targets take. Every trial is one record under its key; a measured one holds its latency in ms as
"time", one that did not fit the target a failure string; one variant per cachefile."""
import json
import os
import subprocess

from loop_support import BIN, check, one_error_line, query, run, run_json, tempdir, write_goal

GOAL = """name: space-exp
kernel: {family: exp, shape: {rows: 250, cols: 512}, dtype: fp32}
target: trn1
objective: latency
start: {variant: tiled}
variants: [tiled]
"""


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
        both = write_goal(tmp, "both.yaml", GOAL.replace("variants: [tiled]\n", "variants: [naive, tiled]\n"))
        mixed = run_json(["sweep", both, "--jobs", "2"], db, timeout=600)
        one_error_line(run(["export", str(mixed["run_id"]), "--cachefile"], db), "one variant", "variants: [V]")
    print("ok")


if __name__ == "__main__":
    main()
