"""autotune suite: a tiny suite (two small tasks and one not yet a family, on trn1 and trn2) run for real:
the table, the JSON (fraction of peak against the trials' own roofline figures), resumability (a second
invocation runs nothing; an interrupted run is resumed, not restarted), the report page of the suite, and
mistakes in the suite file as one line naming file:line with exit 2 before any work."""
import json
import os
import re

from loop_support import check, one_error_line, query, run, run_json, tempdir, write_goal

SUITE = """
name: tiny
targets: [trn1, trn2]
seed: 3
budget: {evaluations: 6}
max_iterations: 2
tasks:
  - name: act
    kernel: {family: silu, shape: {rows: 256, cols: 1024}, dtype: fp32}
    start: {variant: naive}
  - name: scan
    unavailable: needs a scan instruction
  - name: mm
    kernel: {family: gemm, shape: {M: 256, N: 512, K: 256}, dtype: bf16}
    start: {variant: tiled}
    search:
      space: {tile_m: [64, 128]}
    note: a small product
"""


def page_data(html):
    text = re.search(r'<script type="application/json" id="autotune-data">(.*?)</script>', html, re.S).group(1)
    return json.loads(text)


def best_roofline_fraction(db, run_id):
    """The best measured trial's own roofline_fraction metric, as the evaluation reported it."""
    rows = query(db, "SELECT metrics FROM trials WHERE run = ? AND status IN ('ok', 'cached')", (run_id,))
    metrics = [json.loads(m) for (m,) in rows]
    best = min(metrics, key=lambda m: m["latency_s"])
    return best["roofline_fraction"], best["latency_s"]


def check_errors(tmp):
    db = os.path.join(tmp, "never.db")
    cases = [
        ("family", SUITE.replace("family: silu", "family: sliu"), [":9:", "unknown kernel 'sliu'"]),
        ("key", SUITE.replace("    note: a small", "    nots: x\n    note: a small"), [":18:", "nots"]),
        ("target", SUITE.replace("[trn1, trn2]", "[trn1, trn9]"), [":3:", "trn9"]),
        ("twice", SUITE.replace("name: mm", "name: act"), [":13:", "'act' is listed twice"]),
        ("variant", SUITE.replace("{variant: naive}", "{variant: fused}"), [":10:", "tasks.act.start.variant:", "fused"]),
        # The goal's variants are the accepted ones, each named once.
        ("start", SUITE.replace("{variant: tiled}", "{variant: tild}\n    variants: [tiled, hoisted]"),
         [":15:", "tasks.mm.start.variant: variant 'tild' is not a variant of kernel 'gemm'; accepted: tiled, hoisted"]),
        ("shape", SUITE.replace("rows: 256, cols: 1024", "rows: 256"), [":9:", "missing cols"]),
        ("space", SUITE.replace("tile_m: [64, 128]", "tile_q: [64]"), ["tile_q"]),
        ("budget", SUITE.replace("evaluations: 6", "evaluations: 0"), [":5:", "must be at least 1"]),
        ("options", SUITE.replace("max_iterations: 2", "max_iterations: 2\nsearch: {strategy: random, options: {xi: 1}}"),
         [":7:", "search.options:", "strategy 'random': unknown option 'xi'"]),
        # Variants that leave out the baseline a task without a start starts from: said at the variants written.
        ("no-start", SUITE.replace("    start: {variant: tiled}\n", "    variants: [hoisted]\n"),
         [":15:", "tasks.mm.variants: the run starts from the family's baseline 'tiled', which is not among these "
          "variants; accepted: variants that include tiled, or a start: {variant: V} with V one of hoisted"]),
        # The hint names only what a task takes (a goal's kernel_source is not a task's key).
        ("no-kernel", SUITE.replace("    kernel: {family: silu, shape: {rows: 256, cols: 1024}, dtype: fp32}\n", ""),
         ["tasks.act.kernel: missing required section; accepted: kernel: {family, shape, dtype}, or unavailable: "]),
        # A mistake only one target's figures make names that target.
        ("one-target", SUITE.replace("      space: {tile_m: [64, 128]}\n", "      space: {tile_m: [64, 128]}\n"
                                     "      constraints: [\"sbuf_bytes_per_partition >= 200000\"]\n"),
         ["tasks.mm.search.constraints:", "is false whatever the parameters (on target trn1; trn2 takes it)"]),
    ]
    for name, text, needles in cases:
        path = write_goal(tmp, f"bad-{name}.yaml", text)
        proc = run(["suite", path], db)
        one_error_line(proc, path, *needles)
        check(not os.path.exists(db), f"{name}: the database was created before the suite file was checked")
        if name == "start":
            check(proc.stderr.strip().endswith("accepted: tiled, hoisted"), f"variants named twice: {proc.stderr}")
        if name == "no-kernel":
            check("kernel_source" not in proc.stderr, f"a key a task refuses is suggested: {proc.stderr}")
    proc = run(["report", "--suite", write_goal(tmp, "bad.yaml", cases[0][1])], db)
    one_error_line(proc, "unknown kernel 'sliu'")


def main():
    with tempdir() as tmp:
        check_errors(tmp)
        suite = write_goal(tmp, "tiny.yaml", SUITE)
        db = os.path.join(tmp, "suite.db")

        proc = run(["suite", suite, "--jobs", "2", "--json"], db, timeout=600)
        check(proc.returncode == 0, f"suite exited {proc.returncode}: {proc.stderr[-2000:]}")
        first = json.loads(proc.stdout)
        rows = first["rows"]
        # The runs going at once never hold more than --jobs workers together.
        held, most = {}, 0
        for line in proc.stderr.splitlines():
            started = re.search(r": run (\d+) started \((\d+) workers?\)", line)
            ended = re.search(r": run (\d+) (completed|failed|interrupted)", line)
            if started:
                held[started.group(1)] = int(started.group(2))
                most = max(most, sum(held.values()))
            elif ended:
                held.pop(ended.group(1), None)
        check(held == {} and 0 < most <= 2, f"workers held at once: {most}\n{proc.stderr}")
        check([(r["task"], r["target"]) for r in rows] ==
              [("act", "trn1"), ("act", "trn2"), ("scan", "trn1"), ("scan", "trn2"), ("mm", "trn1"), ("mm", "trn2")],
              f"rows in file order, every target: {[(r['task'], r['target']) for r in rows]}")
        check(first["runs_started"] == 4, f"four runs started: {first['runs_started']}")
        for r in rows:
            if r["task"] == "scan":
                check(r["status"] == "not yet a family" and r["reason"] == "needs a scan instruction" and
                      r["run"] is None, f"the unavailable task: {r}")
                continue
            check(r["status"] == "completed" and r["ran_now"] and r["run"], f"a completed run: {r}")
            check(0 < r["evaluations"] <= 6, f"the budget of 6 evaluations: {r['evaluations']}")
            fraction, latency = best_roofline_fraction(db, r["run"])
            check(abs(r["tuned_latency_s"] - latency) <= 1e-12 * latency, f"tuned latency {r} vs {latency}")
            check(abs(r["fraction_of_peak"] - fraction) <= 1e-9, f"fraction of peak {r['fraction_of_peak']} vs "
                  f"the best trial's roofline_fraction {fraction}")
            check(0 < r["baseline_fraction_of_peak"] <= r["fraction_of_peak"] <= 1, f"fractions: {r}")
            check(r["baseline_latency_s"] >= r["tuned_latency_s"], f"tuned no slower than the baseline: {r}")
        check(rows[4]["note"] == "a small product", "the task's note is kept")
        for mean in first["means"]:
            measured = [r["fraction_of_peak"] for r in rows if r["target"] == mean["target"] and r["run"]]
            check(mean["tasks"] == 2 and abs(mean["fraction_of_peak"] - sum(measured) / 2) < 1e-12,
                  f"the mean on {mean['target']}: {mean} vs {measured}")
        runs_before = query(db, "SELECT COUNT(*) FROM runs")[0][0]
        check(runs_before == 4, f"four runs in the database: {runs_before}")

        # A second invocation runs nothing: every task's run for the same goal is completed.
        second = run_json(["suite", suite], db)
        check(second["runs_started"] == 0, f"nothing new: {second['runs_started']}")
        check([r["run"] for r in second["rows"]] == [r["run"] for r in rows], "the same runs")
        check(not any(r["ran_now"] for r in second["rows"]), "no row ran now")
        check(query(db, "SELECT COUNT(*) FROM runs")[0][0] == 4, "no run was added")

        # An interrupted run is resumed (the same run id, no new run), the others left alone.
        interrupted = rows[1]["run"]
        query_db = __import__("sqlite3").connect(db)
        query_db.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", (interrupted,))
        query_db.commit()
        query_db.close()
        third = run_json(["suite", suite], db)
        check(third["runs_started"] == 1, f"one run resumed: {third['runs_started']}")
        resumed = [r for r in third["rows"] if r["ran_now"]]
        check(len(resumed) == 1 and resumed[0]["run"] == interrupted and resumed[0]["status"] == "completed",
              f"run {interrupted} resumed and completed: {resumed}")
        check(query(db, "SELECT COUNT(*) FROM runs")[0][0] == 4, "resuming added no run")

        # The table for people.
        proc = run(["suite", suite], db)
        check(proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}")
        out = proc.stdout
        check("scan" in out and "not yet a family: needs a scan instruction" in out, out)
        for r in rows:
            if r["run"]:
                check(re.search(rf"^{r['task']}\s+{r['target']}\s+.*run {r['run']} \(earlier\)", out, re.M),
                      f"a row for {r['task']} on {r['target']}: {out}")
        for mean in first["means"]:
            check(f"mean fraction of peak on {mean['target']}: {100 * mean['fraction_of_peak']:.1f}% over 2 tasks"
                  in out, f"the mean on {mean['target']}: {out}")

        # The report page: the suite's rows, and each run's own document to link to.
        page = os.path.join(tmp, "suite.html")
        proc = run(["report", "--suite", suite, "--no-timelines", "-o", page], db)
        check(proc.returncode == 0, f"report --suite exited {proc.returncode}: {proc.stderr}")
        data = page_data(open(page).read())
        check([r["run"] for r in data["suite"]["rows"]] == [r["run"] for r in rows], "the page's rows")
        check(sorted(d["id"] for d in data["runs"]) == sorted(r["run"] for r in rows if r["run"]),
              "every task's run is on the page")
        one_error_line(run(["report", "--suite", suite, "1"], db), "not both")

        # A run of another simulator version is neither the task's nor resumed, even interrupted: the task gets a
        # new run, and the row names the earlier one.
        def measured_by_another_version(run_id):
            connection = __import__("sqlite3").connect(db)
            connection.execute("UPDATE runs SET simulator_version = 'sim-0.9', status = 'interrupted' WHERE id = ?",
                               (run_id,))
            connection.commit()
            connection.close()

        runs_before = query(db, "SELECT COUNT(*) FROM runs")[0][0]
        old = rows[0]["run"]
        measured_by_another_version(old)
        proc = run(["report", "--suite", suite, "--no-timelines", "-o", page], db)
        check(proc.returncode == 0, f"report --suite exited {proc.returncode}: {proc.stderr}")
        shown = page_data(open(page).read())["suite"]["rows"][0]
        check(shown["run"] is None and shown["status"] == "not run" and
              shown["earlier_run"] == {"run": old, "simulator_version": "sim-0.9"},
              f"the report shows another version's run as the task's: {shown}")
        fourth = run_json(["suite", suite], db)
        row = fourth["rows"][0]
        check(fourth["runs_started"] == 1 and row["ran_now"] and row["run"] != old and row["status"] == "completed",
              f"a new run for act on trn1: {row}")
        check(row["earlier_run"] == {"run": old, "simulator_version": "sim-0.9"}, f"earlier run: {row}")
        check(query(db, "SELECT status FROM runs WHERE id = ?", (old,))[0][0] == "interrupted",
              "the other version's run was resumed")
        check(query(db, "SELECT COUNT(*) FROM runs")[0][0] == runs_before + 1, "one new run")
        old = rows[1]["run"]
        measured_by_another_version(old)
        proc = run(["suite", suite], db)
        check(proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr}")
        check(re.search(rf"^act\s+trn2\s+.*run \d+ \(earlier run {old} was simulator sim-0.9: new run\)$",
                        proc.stdout, re.M), proc.stdout)
    print("ok")


if __name__ == "__main__":
    main()
