"""Noise-aware measuring end to end (core/noise.hpp, docs/goals.md "Noisy measurements").

A command target whose program reports a latency with seeded noise (+-3% per run, 5 runs per candidate):
  x=0  the start, about 1.00 ms
  x=1  about 0.98 ms: a lower median, but inside the start's noise
  x=2  its first measurement reads 0.40 ms (a transient, as a device glitch would give), later ones 1.00 ms
  x=3  about 0.50 ms, every time
The loop must not take x=1 as an improvement (its interval overlaps the best's), must measure x=2 and x=3 again
before they count (both beat the best by far more than the noise), drop x=2 when its runs together no longer lie
below the best's interval, and keep a best whose interval lies wholly below the start's. The report's best-so-far
line and intervals follow the same figures."""
import json
import os
import re
import sqlite3

from loop_support import check, query, run, run_json, tempdir, write_goal

PROGRAM = r"""#!/usr/bin/env python3
import json, os, random, sys
x = int(sys.argv[1])
repeat = int(os.environ["AUTOTUNE_REPEAT"])
# Which measurement of this candidate this run belongs to (a measurement is `repeats` runs).
counter = f"measurements-{x}"
count = int(open(counter).read()) if os.path.exists(counter) else 0
if repeat == 0:
    count += 1
    open(counter, "w").write(str(count))
true_latency = {0: 1.0e-3, 1: 0.98e-3, 2: 0.40e-3 if count == 1 else 1.0e-3, 3: 0.50e-3}[x]
noise = random.Random(f"{x}-{count}-{repeat}").uniform(-0.03, 0.03)
print(json.dumps({"latency_s": true_latency * (1 + noise)}))
"""

GOAL = """
name: noisy
target:
  kind: command
  argv: [./noisy.py, "{x}"]
  repeats: 5
  timeout_s: 30
search:
  strategy: grid
  space: {x: [0, 1, 2, 3]}
start: {params: {x: 0}}
max_iterations: 2
budget: {evaluations: 12}
"""


def interval(metrics):
    i = metrics.get("intervals", {}).get("latency_s")
    return (i["low"], i["high"]) if i else None


def main():
    with tempdir() as tmp:
        program = os.path.join(tmp, "noisy.py")
        with open(program, "w") as f:
            f.write(PROGRAM)
        os.chmod(program, 0o755)
        goal = write_goal(tmp, "noisy.yaml", GOAL)
        db = os.path.join(tmp, "noisy.db")
        result = run_json(["run", goal], db)
        run_id = result["run_id"]

        trials = {}
        for trial_id, params, metrics, repeats in query(
                db, "SELECT id, params, metrics, repeats FROM trials WHERE run = ? AND status = 'ok' ORDER BY id",
                (run_id,)):
            x = json.loads(params)["x"]
            trials.setdefault(x, []).append({"id": trial_id, "metrics": json.loads(metrics),
                                            "runs": len(json.loads(repeats))})
        check(sorted(trials) == [0, 1, 2, 3], f"measured {sorted(trials)}, expected every x")
        start = trials[0][0]
        start_low, start_high = interval(start["metrics"])
        check(start["runs"] == 5 and start_low < start["metrics"]["latency_s"] < start_high,
              f"the start's interval {start_low, start_high} around {start['metrics']['latency_s']}")

        # x=1: lower median, overlapping interval; not taken, and the log says why with the intervals.
        near = trials[1][0]
        check(near["metrics"]["latency_s"] < start["metrics"]["latency_s"],
              "the scenario needs x=1's median below the start's (the seeded noise changed?)")
        check(interval(near["metrics"])[0] <= start_high, "x=1's interval should overlap the start's")
        check(len(trials[1]) == 1, "x=1 was measured again, but it is no win beyond the noise")
        noise_log = query(db, "SELECT evidence FROM decisions WHERE run = ? AND action = 'within_noise'", (run_id,))
        check(any(e["trial"] == near["id"] and "interval" in e for row in noise_log
                  for e in json.loads(row[0])["within_noise"]),
              f"no within_noise decision names trial {near['id']}: {noise_log}")

        # x=2 and x=3: measured again, each second trial pooling both measurements (10 runs).
        again = query(db, "SELECT inputs, outcome FROM decisions WHERE run = ? AND action = 'measure_again'", (run_id,))
        again_ids = [i for row in again for i in json.loads(row[0])["trials"]]
        for x in (2, 3):
            check(len(trials[x]) == 2, f"x={x} has {len(trials[x])} trials; a far win must be measured again")
            first, second = trials[x]
            check(first["id"] in again_ids, f"no measure_again decision for trial {first['id']}")
            check(second["runs"] == 10 and second["metrics"]["remeasured"]["of_trial"] == first["id"],
                  f"x={x}'s second trial should pool both measurements: {second}")
        glitch = trials[2]
        check(glitch[0]["metrics"]["latency_s"] < 0.5e-3 and interval(glitch[1]["metrics"])[1] >= start_low,
              "the glitch scenario did not happen as built")
        outcomes = " ".join(row[1] for row in again)
        check(f"trial {glitch[0]['id']} again as trial {glitch[1]['id']}: not confirmed" in outcomes, outcomes)

        # The best: measured again, its interval wholly below the start's, and neither x=1 nor the glitch.
        best = result["best"]["trial"]
        best_trial = next(t for ts in trials.values() for t in ts if t["id"] == best)
        check("remeasured" in best_trial["metrics"], f"the best, trial {best}, was not measured again")
        check(interval(best_trial["metrics"])[1] < start_low,
              f"the best's interval {interval(best_trial['metrics'])} is not below the start's {start_low}")
        check(best not in (near["id"], glitch[0]["id"], glitch[1]["id"]), f"trial {best} is the best")
        check(f"trial {trials[3][0]['id']} again as trial {trials[3][1]['id']}: confirmed" in outcomes, outcomes)

        # The report: intervals on the points and the header, the best-so-far line by the same rule.
        page = os.path.join(tmp, "report.html")
        proc = run(["report", str(run_id), "--no-timelines", "-o", page], db)
        check(proc.returncode == 0, proc.stderr)
        html = open(page).read()
        data = json.loads(re.search(r'<script type="application/json" id="autotune-data">(.*?)</script>',
                                    html, re.S).group(1))["runs"][0]
        check(data["best"]["trial"] == best and data["best"]["interval"] is not None, f"header {data['best']}")
        check(all(p["interval"] for p in data["points"] if p["status"] == "ok"), "a point lacks its interval")
        line = [b[2] for b in data["best_so_far"]]
        check(line[0] == start["id"] and line[-1] == best and near["id"] not in line and glitch[0]["id"] not in line,
              f"the best-so-far line goes through {line}")

        # `autotune trials`: each measured trial's interval of the median beside its latency, in the plain
        # table as in --json.
        proc = run(["trials", str(run_id)], db)
        check(proc.returncode == 0, proc.stderr)
        lines = proc.stdout.splitlines()
        header = next(line for line in lines if line.startswith("id "))
        check("interval of the median" in header, f"no interval column: {header}")
        for x, ts in trials.items():
            for t in ts:
                low, high = interval(t["metrics"])
                row = next(line for line in lines if line.split()[0] == str(t["id"]))
                shown = re.search(r"([\d.]+)-([\d.]+) (s|ms|us|ns) \(([\d.]+)%, (\d+) runs\)", row)
                check(shown, f"trial {t['id']}: no interval in {row!r}")
                scale = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[shown.group(3)]
                check(abs(float(shown.group(1)) * scale - low) <= 0.0005 * scale and
                      abs(float(shown.group(2)) * scale - high) <= 0.0005 * scale and
                      int(shown.group(5)) == t["runs"], f"trial {t['id']}: {row!r} against {low, high}")

        # The budget holds: a far win at the last evaluation is not measured again (that would be one
        # evaluation more); it counts as measured once, beyond the noise, and the log says so.
        for name in os.listdir(tmp):
            if name.startswith("measurements-"):
                os.remove(os.path.join(tmp, name))
        tight = write_goal(tmp, "tight.yaml", GOAL.replace("x: [0, 1, 2, 3]", "x: [0, 3]")
                           .replace("evaluations: 12", "evaluations: 2"))
        tight_db = os.path.join(tmp, "tight.db")
        result = run_json(["run", tight], tight_db)
        check(result["evaluations"] == 2, f"{result['evaluations']} evaluations for a budget of 2")
        rows = query(tight_db, "SELECT outcome FROM decisions WHERE run = ? AND action = 'not_measured_again'",
                     (result["run_id"],))
        check(len(rows) == 1 and "the new best, measured once" in rows[0][0], f"not_measured_again: {rows}")
        check(result["best"]["params"] == {"x": 3}, f"best {result['best']}")
    print("ok")


if __name__ == "__main__":
    main()
