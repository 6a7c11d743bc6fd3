"""Screened tuning end to end (docs/loop.md, "Screened tuning"): a GEMM tuned on a stand-in device (the
simulator at bench/targets/trn2-standin.yaml) with a screen simulating trn2. The decision log shows the
simulated and the measured figure of every device trial, the screen's rankings choose what the device
measures, and `autotune report` carries the simulated-against-measured points. Which configuration wins
is never asserted."""
import json
import os
import re
import subprocess

from loop_support import BIN, SOURCE, check, fail, query, run, run_json, tempdir, write_goal

STANDIN = os.path.join(SOURCE, "bench", "targets", "trn2-standin.yaml")

GOAL = f"""
name: screened
kernel: {{family: gemm, shape: {{M: 256, N: 512, K: 512}}, dtype: bf16}}
target: {STANDIN}
screen: {{target: trn2, keep: 2, propose: 12}}
objective: latency
goal: {{improvement: 0.95}}
max_iterations: 4
budget: {{evaluations: 14}}
search: {{strategy: bayes, batch_size: 2}}
start: {{variant: tiled}}
variants: [tiled, hoisted]
parallel: 2
seed: 2
"""


# A device the screen knows well: trn2 with its launch overhead 9.0 us instead of 9.43, so after the baseline
# the screen's margin is its floor (5%), and a space whose start (tile_n 512) the screen predicts the fastest by
# more than that.
OUT_GOAL = """
name: screened-out
kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}
target: DEVICE
screen: {target: trn2, keep: 2, propose: 12}
objective: latency
goal: {improvement: 0.5}
max_iterations: 4
budget: {evaluations: 14}
search:
  strategy: bayes
  batch_size: 2
  space: {tile_n: [64, 128, 512], tile_m: [64, 128], tile_k: [64, 128], unroll_factor: [1], pipeline_depth: [2]}
start: {variant: tiled, params: {tile_n: 512}}
variants: [tiled]
seed: 2
"""


def check_screened_out(tmp):
    """A screen that leaves out every idea stops the run before any device evaluation past the baseline, and
    the log says why: each idea's best prediction against the bound, then the stop."""
    trn2 = open(os.path.join(SOURCE, "configs", "targets", "trn2.yaml")).read()
    device, moved = re.subn(r"(?m)^launch_overhead_us: *[0-9.]+", "launch_overhead_us: 9.0", trn2)
    check(moved == 1, "trn2.yaml has one launch_overhead_us line")
    device_file = os.path.join(tmp, "device.yaml")
    with open(device_file, "w") as f:
        f.write(device)
    db = os.path.join(tmp, "out.db")
    summary = run_json(["run", write_goal(tmp, "out.yaml", OUT_GOAL.replace("DEVICE", device_file))], db)
    run_id = str(summary["run_id"])
    check(summary["status"] == "completed", f"status {summary['status']}")
    check("the screen predicts none of the ideas' candidates within its margin" in summary["stop_reason"],
          f"stop reason: {summary['stop_reason']}")
    trials = query(db, "SELECT COUNT(*) FROM trials WHERE run = ?", (run_id,))[0][0]
    check(summary["evaluations"] == 1 == trials, f"{summary['evaluations']} evaluations, {trials} trials: the "
                                                 "baseline alone")
    log = decisions(db, run_id)
    check(not [d for d in log if d["action"] == "screen"], "no round was screened: no idea was explored")
    ideas = [d for d in log if d["action"] == "screen_ideas"]
    check(len(ideas) == 1, f"{len(ideas)} screen_ideas decisions")
    screened = ideas[0]
    bound = screened["evidence"]["bound"]
    check(bound["margin"] < 0.1, f"the screen learnt the device from the baseline: margin {bound['margin']}")
    check(screened["evidence"]["ideas"], "the generator had ideas")
    for idea in screened["evidence"]["ideas"]:
        check(idea["outcome"].startswith("left out"), f"idea {idea['idea']}: {idea['outcome']}")
        if "best_predicted_s" in idea:
            check(idea["best_predicted_s"] > bound["bound_s"], f"idea {idea['idea']} is left out within the bound")
    check(screened["outcome"].startswith("no idea left; left out: "), f"screen_ideas outcome {screened['outcome']}")
    after = log[log.index(screened) + 1]
    check(after["skill"] == "orchestrator" and after["action"] == "stop" and after["proposer"] == "simulator"
          and "screen_ideas" in after["rationale"] and "no device evaluation" in after["rationale"],
          f"the decision after the screen's: {after}")
    check(log[-1]["action"] == "finish" and log[-1]["rationale"] == summary["stop_reason"], f"finish: {log[-1]}")


def decisions(db, run_id):
    out = run_json(["log", run_id], db)
    return out if isinstance(out, list) else out["decisions"]


def main():
    with tempdir() as tmp:
        db = os.path.join(tmp, "t.db")
        summary = run_json(["run", write_goal(tmp, "screened.yaml", GOAL)], db)
        run_id = str(summary["run_id"])
        check(summary.get("screen_simulations", 0) > 0, f"the summary counts the screen's simulations: {summary}")
        log = decisions(db, run_id)
        feedback = [d for d in log if d["action"] == "screen_feedback"]
        rankings = [d for d in log if d["action"] == "screen"]
        check(rankings, "the screen ranked proposals in some round")

        # Every device trial with a latency: its simulated and measured figures, once.
        trials = query(db, "SELECT id, metrics FROM trials WHERE run = ? AND status = 'ok' ORDER BY id", (run_id,))
        check(trials, "the run measured trials")
        shown = {}
        for d in feedback:
            for t in d["evidence"]["trials"]:
                check(t["trial"] not in shown, f"trial {t['trial']} is in one screen_feedback decision")
                shown[t["trial"]] = t
            check(re.search(r"trial \d+: simulated [\d.e+-]+ ms, measured [\d.e+-]+ ms", d["outcome"]),
                  f"the feedback's outcome says both figures: {d['outcome']}")
        for trial_id, metrics in trials:
            check(trial_id in shown, f"trial {trial_id} has its simulated and measured figures in the log")
            t = shown[trial_id]
            measured = json.loads(metrics)["latency_s"]
            check(abs(t["measured_s"] - measured) <= 1e-12 * measured, f"trial {trial_id}: measured as stored")
            check(t["simulated_s"] > 0, f"trial {trial_id}: simulated")
        # The stand-in is not the screen's machine: some trial's figures differ by more than rounding.
        check(any(abs(t["measured_s"] / t["simulated_s"] - 1) > 0.01 for t in shown.values()),
              "the stand-in device differs from the screen")

        # The baseline's simulated figure is trn2's own (nothing corrected it yet).
        baseline = min(shown)
        params = shown[baseline]["params"]
        proc = subprocess.run([BIN, "profile", "--kernel", "gemm", "--variant", shown[baseline]["variant"], "--target",
                               "trn2", "--shape", "M=256,N=512,K=512", "--no-verify", "--json"]
                              + [a for k, v in params.items() for a in ("--param", f"{k}={v}")],
                              capture_output=True, text=True, timeout=120)
        check(proc.returncode == 0, f"profile: {proc.stderr}")
        profile = json.loads(proc.stdout)
        simulated = profile["latency_s"] if "latency_s" in profile else profile["summary"]["latency_s"]
        check(abs(shown[baseline]["simulated_s"] / simulated - 1) < 1e-6,
              f"baseline simulated {shown[baseline]['simulated_s']} on trn2 {simulated}")

        # What a ranking chose is what the device measured next, and it is the head of the ranking.
        rows = query(db, "SELECT variant, params FROM trials WHERE run = ? ORDER BY id", (run_id,))
        measured_keys = [(v, json.dumps({k: x for k, x in json.loads(p).items() if k != "_"}, sort_keys=True))
                         for v, p in rows]
        for d in rankings:
            ranking = d["evidence"]["ranking"]
            chosen = [r for r in ranking if r["chosen"]]
            check(all(r["chosen"] for r in ranking[:len(chosen)]), "the chosen head the ranking")
            check(chosen or d["outcome"].startswith("none to the device"), f"a ranking that chose none says so: {d}")
            predicted = [r["predicted_s"] for r in ranking if "predicted_s" in r]
            check(predicted == sorted(predicted), "the ranking is by predicted latency")
            for r in chosen:
                key = (r["variant"], json.dumps(r["params"], sort_keys=True))
                check(key in measured_keys, f"the chosen {key} was measured on the device")

        # Every candidate the device measured after the baseline went through the screen first: a
        # structural probe, a raise, a neighbourhood, the handover's proposals alike. Each was chosen by a
        # ranking, within its bound, and the device measured fewer candidates than the screen ranked.
        chosen_keys = set()
        ranked = 0
        for d in rankings:
            bound = d["evidence"].get("bound", {}).get("bound_s")
            ranked += d["inputs"]["proposals"]
            for r in d["evidence"]["ranking"]:
                if r["chosen"]:
                    chosen_keys.add((r["variant"], json.dumps(r["params"], sort_keys=True)))
                    if bound is not None and "predicted_s" in r:
                        check(r["predicted_s"] <= bound * (1 + 1e-12), f"chosen within the bound: {r} {bound}")
        rows = query(db, "SELECT variant, params, metrics FROM trials WHERE run = ? ORDER BY id", (run_id,))
        for variant, params, metrics in rows[1:]:
            if "remeasured" in json.loads(metrics or "{}"):
                continue
            key = (variant, json.dumps({k: x for k, x in json.loads(params).items() if k != "_"}, sort_keys=True))
            check(key in chosen_keys, f"the device trial {key} was chosen by a screen ranking")
        check(ranked > len(rows) - 1, f"the screen ranked more ({ranked}) than the device measured ({len(rows) - 1})")
        # The ideas themselves are ranked by the screen before the policy picks one.
        idea_rankings = [d for d in log if d["action"] == "screen_ideas"]
        check(idea_rankings, "the screen ranked the ideas")
        for d in idea_rankings:
            for idea in d["evidence"]["ideas"]:
                check(idea["outcome"] == "ranked" or idea["outcome"].startswith(("left out", "kept")),
                      f"every idea has an outcome: {idea}")
        first = idea_rankings[0]
        ranked_ideas = [i for i in first["evidence"]["ideas"] if i["outcome"] == "ranked"]
        order = first["outcome"].split(";")[0].removeprefix("order: ").split(", ")
        predicted = {i["idea"]: i["best_predicted_s"] for i in ranked_ideas}
        check([predicted[i] for i in order if i in predicted] == sorted(predicted.values()),
              f"the ideas ordered by their best prediction: {first['outcome']}")

        # The report carries one simulated-against-measured point per device trial.
        page = os.path.join(tmp, "report.html")
        check(run(["report", run_id, "--no-timelines", "-o", page], db).returncode == 0, "report")
        html = open(page).read()
        data = json.loads(re.search(r'<script type="application/json" id="autotune-data">(.*?)</script>', html,
                                    re.S).group(1))
        runs = data["runs"] if isinstance(data, dict) and "runs" in data else data
        points = runs[0]["screen"]
        check(sorted(p[0] for p in points) == sorted(shown), "a report point per device trial")

        check_screened_out(tmp)

        # Without a screen: nothing of it in the log.
        plain = run_json(["run", write_goal(tmp, "plain.yaml", GOAL.replace("screen: {target: trn2, keep: 2, propose: 12}\n", ""))], db)
        check(not [d for d in decisions(db, str(plain["run_id"])) if d["action"].startswith("screen")],
              "an unscreened run logs no screen decision")
    print("ok")


if __name__ == "__main__":
    main()
